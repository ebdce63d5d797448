-- A trace belongs to the turn that took its steps: a silent generation, or a turn that failed before writing
-- anything, keeps no answer but a trace all the same; `message_id` names the answer the turn kept. The steps
-- (model calls and tool calls) are one JSON array, written once when the turn ends and always read whole.
create table turn_traces (
    turn_id    text primary key,
    thread_id  text not null references threads (id) on delete cascade,
    user_id    text not null,
    message_id text references messages (id) on delete cascade,
    steps      text not null,
    created_at integer not null
);
create index turn_traces_thread on turn_traces (thread_id, created_at);
create index turn_traces_message on turn_traces (message_id);

-- The tool calls kept so far become one trace per answer, under the answer's id (their turn was not kept).
insert into turn_traces (turn_id, thread_id, user_id, message_id, steps, created_at)
select m.id, m.thread_id, m.user_id, m.id,
       json_group_array(json(t.step_json)),
       min(t.started_at)
from (
    -- In step order, which the array keeps.
    select message_id, step, started_at, json_object(
               'kind', 'tool_call',
               'name', coalesce(tool, ''),
               'arguments', json(coalesce(input, 'null')),
               'result', result,
               'error', error,
               'duration_ms', max(duration_ms, 0),
               'started_at', strftime('%Y-%m-%dT%H:%M:%fZ', started_at / 1000000.0, 'unixepoch')
           ) as step_json
    from traces where kind = 'tool_call' order by message_id, step
) t join messages m on m.id = t.message_id
group by m.id;

drop table traces;
