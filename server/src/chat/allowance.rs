//! What a turn may spend under a budget: the estimate its start reserves, and the `max_tokens` each of its calls
//! may ask for within what the reservation leaves.
/// Most tokens one model call of a turn may write.
pub const ANSWER_MAX_TOKENS: u32 = 4096;

/// Fewest tokens a call is asked to write within a budget: after a turn's first call, one that cannot have this
/// many is not made (the turn ends with [`OVER_BUDGET`]).
pub(super) const MIN_CALL_TOKENS: u64 = 64;
/// Tokens of a request beyond the conversation (Quire's rules, a person's instructions, the tools' descriptions)
/// that a turn's estimate allows for.
const PROMPT_OVERHEAD_TOKENS: u64 = 4_000;
/// The calls a turn's estimate covers: one that asks for a tool and one that answers with its result.
const ESTIMATED_CALLS: u64 = 2;
/// What ends an answer cut short by the budget.
pub(super) const OVER_BUDGET: &str =
    "*The answer stops here: it used the tokens today's budget leaves for one answer.*";
/// What ends an answer cut off by its length limit while it was calling a tool (the call, incomplete, is not run).
pub(super) const CUT_OFF: &str =
    "*The answer stops here: it reached its length limit, so what it was writing was not saved.*";

/// Most tokens one turn reserves while a budget applies (see [`TurnLimits::turn_tokens`](store::TurnLimits)):
/// [`ESTIMATED_CALLS`] calls, each with a whole conversation of `context_tokens` and a whole answer.
pub fn turn_estimate(context_tokens: usize) -> u64 {
    let call = (context_tokens as u64).saturating_add(PROMPT_OVERHEAD_TOKENS).saturating_add(ANSWER_MAX_TOKENS.into());
    call.saturating_mul(ESTIMATED_CALLS)
}

/// The `max_tokens` a call may ask for when the turn's reservation is `allowance`, its calls so far cost `spent`
/// and this call's request costs `prompt`: what is left, at least [`MIN_CALL_TOKENS`] for the turn's first call,
/// and `None` for a later call that would have fewer.
pub(super) fn call_cap(allowance: u64, spent: u64, prompt: u64, first: bool) -> Option<u32> {
    let left = allowance.saturating_sub(spent).saturating_sub(prompt);
    if !first && left < MIN_CALL_TOKENS {
        return None;
    }
    let cap = left.clamp(MIN_CALL_TOKENS, ANSWER_MAX_TOKENS.into());
    Some(u32::try_from(cap).unwrap_or(ANSWER_MAX_TOKENS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_asks_for_what_is_left_and_a_later_one_needs_enough() {
        assert_eq!(call_cap(10_000, 0, 1_000, true), Some(ANSWER_MAX_TOKENS));
        assert_eq!(call_cap(2_000, 500, 1_000, false), Some(500));
        assert_eq!(call_cap(1_000, 0, 1_000, true), Some(64), "the first call is made all the same");
        assert_eq!(call_cap(1_050, 0, 1_000, false), None, "a later one with too little left is not");
    }
}
