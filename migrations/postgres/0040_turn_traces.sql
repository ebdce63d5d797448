-- A trace belongs to the turn that took its steps: a silent generation, or a turn that failed before writing
-- anything, keeps no answer but a trace all the same; `message_id` names the answer the turn kept. The steps
-- (model calls and tool calls) are one JSON array, written once when the turn ends and always read whole.
create table turn_traces (
    turn_id    uuid primary key,
    thread_id  uuid not null references threads (id) on delete cascade,
    user_id    uuid not null,
    message_id uuid references messages (id) on delete cascade,
    steps      jsonb not null,
    created_at timestamptz not null
);
create index turn_traces_thread on turn_traces (thread_id, created_at);
create index turn_traces_message on turn_traces (message_id);

-- The tool calls kept so far become one trace per answer, under the answer's id (their turn was not kept).
insert into turn_traces (turn_id, thread_id, user_id, message_id, steps, created_at)
select m.id, m.thread_id, m.user_id, m.id,
       jsonb_agg(jsonb_build_object(
           'kind', 'tool_call',
           'name', coalesce(t.tool, ''),
           'arguments', coalesce(t.input, 'null'::jsonb),
           'result', t.result,
           'error', t.error,
           'duration_ms', greatest(t.duration_ms, 0),
           'started_at', to_char(t.started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
       ) order by t.step),
       min(t.started_at)
from traces t join messages m on m.id = t.message_id
where t.kind = 'tool_call'
group by m.id, m.thread_id, m.user_id;

drop table traces;
