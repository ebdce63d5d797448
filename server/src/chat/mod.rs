//! One chat turn, from the person's message to a saved answer: context, the model, tools, events. The HTTP layer
//! reaches all of it through [`Engine`].

mod allowance;
pub mod approval;
pub mod changes;
pub mod context;
pub mod edits;
pub mod engine;
pub mod error;
pub mod hub;
pub mod ledger;
pub mod memory;
mod openings;
pub mod prompt;
pub mod replay;
mod spend;
pub mod summary;
mod taken;
pub mod title;
pub mod tools;
pub mod trace;
pub mod turn;
mod writes;

pub use engine::{Engine, Limits};
pub use error::ChatError;
