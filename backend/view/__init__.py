"""PURE folds over records: what the page shows, shared by the page's snapshot, replays,
``kclab check``, scripts' ``expect`` and the statistics. No I/O, clock, threads or random here
(``tests/test_layering.py``); they import only ``backend.core`` and each other.

======================  ========================================================================
``cluster_view.py``     records -> the cluster as the page draws it (brokers, partitions, znodes)
``lesson_view.py``      a lesson's records -> its panel (step, stops, questions, answers)
``rules.py``            the rules Kafka's controller keeps, by id: the one catalogue
``invariants.py``       those rules checked on every record, as a fold over the page's view
                        (by concern in ``controller_rules.py`` and ``partition_rules.py``, with the
                        violations' bookkeeping and words in ``violations.py``)
``page.py``             the page's whole view: ``cluster_view`` then ``invariants``, record by
                        record; what a joining page gets as its snapshot
``replay_check.py``     the rules a replay log's lines must follow (seq, header, record format)
======================  ========================================================================

The browser folds with ports of these (``static/js/model.js``, ``lesson-model.js``,
``invariants-model.js``, ``replay-file.js``); Python is the reference and the contract tests in
``tests/js`` hold each port equal to it on recorded logs.
"""
