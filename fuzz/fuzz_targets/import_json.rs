//! The import planner: any body is either planned or refused as the client's fault (4xx), never a panic or a
//! server error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use quire::history::import::plan;
use quire::http::error::ApiError;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = plan(data) {
        let status = ApiError::from(e).status_code();
        assert!(status.is_client_error(), "{status}");
    }
});
