// GENERATED from backend/view/rules.py by `python -m backend.view.rules`: do not edit.
/** The rules Kafka's controller keeps: id, title, the rule in words. */
export const RULES = [
  {"id": "one_controller", "title": "One controller", "statement": "At most one broker acts as controller with the current /controller_epoch."},
  {"id": "epochs_monotonic", "title": "Epochs only go up", "statement": "/controller_epoch and every partition's leader_epoch never go down."},
  {"id": "leader_in_isr", "title": "Leader is live and in the ISR", "statement": "Every online partition's leader is a live broker in its ISR, and the ISR is a subset of the replicas."},
  {"id": "no_stale_apply", "title": "No stale requests applied", "statement": "No broker applies a request from a controller epoch lower than one it has already seen."},
  {"id": "acked_not_lost", "title": "Acknowledged messages are not lost", "statement": "No acknowledged message is lost. Kafka promises it for acks=all while unclean leader election is off; acks=1 and unclean elections give the promise up."},
  {"id": "hw_le_leo", "title": "High watermark within the log", "statement": "On every replica the high watermark is at most the log end offset."},
  {"id": "min_isr_ack", "title": "acks=all waited for min.insync.replicas", "statement": "An acks=all acknowledgement had at least min.insync.replicas replicas in the ISR."},
];
