//! Attaching a file with `XMLHttpRequest`, the one browser API that reports how much of a request body has been
//! sent (fetch does not), so a file's chip can show its upload moving.

use js_sys::Promise;
use uuid::Uuid;
use wasm_bindgen::{closure::Closure, JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{File, FormData, ProgressEvent, XmlHttpRequest};

use super::client::ApiError;
use super::{Attachment, ErrorBody};

fn browser_error(err: JsValue) -> ApiError {
    ApiError { status: 0, code: "network".into(), message: format!("Could not reach Quire: {err:?}") }
}

/// `POST /api/threads/{id}/attachments` with `file` as the form's `file` field. `on_progress` gets the share of
/// the file sent so far (0.0 to 1.0); once it is all sent the server reads the file before it answers.
pub async fn upload_attachment(
    thread: Uuid,
    file: &File,
    on_progress: impl Fn(f64) + 'static,
) -> Result<Attachment, ApiError> {
    let xhr = XmlHttpRequest::new().map_err(browser_error)?;
    xhr.open("POST", &format!("/api/threads/{thread}/attachments")).map_err(browser_error)?;
    let form = FormData::new().map_err(browser_error)?;
    form.append_with_blob_and_filename("file", file, &file.name()).map_err(browser_error)?;
    let progress = Closure::<dyn Fn(ProgressEvent)>::new(move |event: ProgressEvent| {
        if event.length_computable() && event.total() > 0.0 {
            on_progress(event.loaded() / event.total());
        }
    });
    xhr.upload().map_err(browser_error)?.set_onprogress(Some(progress.as_ref().unchecked_ref()));
    // `loadend` comes once, after success, failure or abort alike.
    let finished = Promise::new(&mut |resolve, _| xhr.set_onloadend(Some(&resolve)));
    xhr.send_with_opt_form_data(Some(&form)).map_err(browser_error)?;
    JsFuture::from(finished).await.map_err(browser_error)?;
    drop(progress);
    let status = xhr.status().map_err(browser_error)?;
    let body = xhr.response_text().map_err(browser_error)?.unwrap_or_default();
    if status == 0 {
        return Err(ApiError { status, code: "network".into(), message: "The upload did not reach Quire.".into() });
    }
    if (200..300).contains(&status) {
        return serde_json::from_str(&body).map_err(|e| browser_error(JsValue::from_str(&e.to_string())));
    }
    Err(match serde_json::from_str::<ErrorBody>(&body) {
        Ok(body) => ApiError { status, code: body.error.code, message: body.error.message },
        Err(_) => ApiError { status, code: "http".into(), message: format!("The server answered {status}.") },
    })
}
