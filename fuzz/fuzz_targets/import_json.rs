//! The import planner: any JSON body is either planned or refused as the client's fault (4xx), never a panic
//! or a server error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quire::http::export::import_plan;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if let Err(e) = import_plan(body) {
        assert!(e.status_code().is_client_error(), "{e:?}");
    }
});
