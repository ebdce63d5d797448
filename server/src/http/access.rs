//! Writes to a conversation the caller only reads. Every write's statement reaches the conversation's rows as
//! their author's, or for documents and requirements as an editor of its project's (so anyone else's write changes
//! nothing and the route answers 404), while its reads reach them as any member's. A 404 to such a write would tell a member who sees the conversation that it is not
//! there (and a check made before the write, a 409 or 422, would judge a change they may not make at all), so
//! this layer, after the route has refused and written nothing, says what is true instead: 403, "you can read
//! this but not change it". Written once, for every write route under a conversation or a
//! document, present and future.

use axum::{
    extract::{FromRequestParts, Request, State},
    http::{Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use store::projects::ThreadReach;
use uuid::Uuid;

use super::error::ApiError;
use super::extract::AuthUser;
use crate::AppState;

/// What a write's path names: a conversation, or a document (found through its conversation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Thread(Uuid),
    Document(Uuid),
}

/// The conversation or document a write to `path` changes, if it is one.
fn target(path: &str) -> Option<Target> {
    let mut parts = path.strip_prefix("/api/")?.split('/');
    let kind = parts.next()?;
    let id = parts.next()?.parse::<Uuid>().ok()?;
    match kind {
        "threads" => Some(Target::Thread(id)),
        "artifacts" => Some(Target::Document(id)),
        _ => None,
    }
}

/// The refusal of a write by someone who only reads.
pub fn read_only() -> ApiError {
    ApiError::Forbidden {
        code: "read_only",
        message: "You can read this conversation in its project, but not change it.".into(),
    }
}

/// The refusal of what only a conversation's author does, to an editor of its project.
pub fn author_only() -> ApiError {
    ApiError::Forbidden {
        code: "author_only",
        message:
            "Only the conversation's author does this; the project's editors change its documents and requirements."
                .into(),
    }
}

/// Turns the refusal of a write (404, or a 409, 422 or 400 about what it asked) into a 403 when the caller
/// reads the conversation as a project viewer: whatever else was wrong, they may not write there. An editor's
/// 404 (what only the author does) becomes a 403 too.
pub async fn read_only_writes(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let writes = !matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let Some(target) = target(request.uri().path()).filter(|_| writes) else {
        return next.run(request).await;
    };
    // The caller, identified once: the route's own extractor finds them in the request's extensions.
    let (mut parts, body) = request.into_parts();
    let user = AuthUser::from_request_parts(&mut parts, &state).await.ok();
    let response = next.run(Request::from_parts(parts, body)).await;
    // A refusal of what was asked (missing, conflicting, malformed) is read: a reader gets "read only" first; an
    // editor, whose document and requirement changes go through, hears the refusal of the rest.
    let refused = matches!(
        response.status(),
        StatusCode::NOT_FOUND | StatusCode::CONFLICT | StatusCode::UNPROCESSABLE_ENTITY | StatusCode::BAD_REQUEST
    );
    let Some(user) = user.filter(|_| refused) else {
        return response;
    };
    let thread = match target {
        Target::Thread(id) => Ok(id),
        Target::Document(id) => state.store.get_artifact(user.id, id).await.map(|a| a.thread_id),
    };
    let reach = match thread {
        Ok(thread) => state.store.thread_reach(user.id, thread).await,
        Err(e) => Err(e),
    };
    match reach {
        Ok(Some(ThreadReach::Member(role))) if !role.writes() => read_only().into_response(),
        Ok(Some(ThreadReach::Member(_))) if response.status() == StatusCode::NOT_FOUND => author_only().into_response(),
        _ => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_name_their_conversation_or_document() {
        let id = Uuid::now_v7();
        assert_eq!(target(&format!("/api/threads/{id}/chat")), Some(Target::Thread(id)));
        assert_eq!(target(&format!("/api/threads/{id}")), Some(Target::Thread(id)));
        assert_eq!(target(&format!("/api/artifacts/{id}/restore")), Some(Target::Document(id)));
        assert_eq!(target("/api/threads/not-an-id/chat"), None);
        assert_eq!(target(&format!("/api/projects/{id}")), None);
        assert_eq!(target("/api/threads"), None);
    }
}
