//! Settings and share links on PostgreSQL. A new link locks its owner's account row before it counts, so links
//! made at once, on any instance, are counted one after the other.

use super::{Postgres, Shared};

crate::settings::preferences_for!(Postgres);
crate::turn_reads::turn_inputs_for!(Postgres);
crate::shares::shares_for!(Postgres);
