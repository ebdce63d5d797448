//! One chat turn, from the person's message to a saved answer: context, the model, tools, events.

pub mod context;
pub mod hub;
pub mod prompt;
pub mod replay;
pub mod summary;
pub mod tools;
pub mod trace;
pub mod turn;
