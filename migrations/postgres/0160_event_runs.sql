-- A turn's events are stored in runs: one row holds the events of one name that came one after another,
-- numbered `seq` to `last_seq`, its data a JSON array of each event's data (a turn's text comes as hundreds of
-- deltas, which were a row each). A row written before has no `last_seq`: it holds one event.
alter table turn_events add column last_seq bigint;
