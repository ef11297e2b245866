"""PURE folds over records that sit above the cluster fold: the rules Kafka's controller keeps.

``rules`` names them (one table: the page, ``kclab check``, scripts' ``expect``, lessons and the
statistics all refer to a rule by its id); ``invariants`` checks them, record by record, as a
fold over the page's view; ``page`` composes that with ``backend.core.cluster_view`` into the
one view the page shows (``static/js/model.js`` + ``static/js/invariants-model.js`` in the
browser, contract-tested against these modules). No I/O, clock, threads or random here.
"""
