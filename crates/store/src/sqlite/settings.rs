//! Settings and share links on SQLite. The one writer makes every link, so a count made in the insert's own
//! write sees every link made before it.

use super::{Shared, Sqlite};

crate::settings::preferences_for!(Sqlite);
crate::turn_reads::turn_inputs_for!(Sqlite);
crate::shares::shares_for!(Sqlite);
