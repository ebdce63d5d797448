//! Files attached from the message box, each a chip that follows its upload and reading or says why it was refused
//! (removing it deletes the file); a first file in a new chat creates the conversation, as a first message does.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;

use leptos::prelude::*;
use leptos::task::spawn_local;
use uuid::Uuid;

use super::actions::ChatActions;
use crate::api::upload::upload_attachment;
use crate::api::{client, Attachment, MAX_ATTACHMENT_BYTES};
use crate::state::{ChatState, ErrorNote, FileStage, PendingFile};

thread_local! {
    static NEXT_KEY: Cell<u64> = const { Cell::new(1) };
    /// Chips removed while their file was on its way: the file is deleted once the server has it.
    static CANCELLED: RefCell<HashSet<u64>> = RefCell::new(HashSet::new());
}

fn next_key() -> u64 {
    NEXT_KEY.with(|n| {
        let key = n.get();
        n.set(key + 1);
        key
    })
}

/// Moves a chip on; a chip that is gone stays gone.
fn set_stage(state: ChatState, key: u64, stage: FileStage) {
    state.pending.update(|files| {
        if let Some(file) = files.iter_mut().find(|f| f.key == key) {
            file.stage = stage;
        }
    });
}

/// The browser's files of a file list (the picker's, a drop's, a paste's).
pub(super) fn files_of(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)).collect()
}

impl ChatActions {
    /// Attaches files to the conversation (created first when there is none yet), one after the other.
    pub(super) fn attach(self, files: Vec<web_sys::File>) {
        let state = self.state();
        let mut queued = Vec::new();
        state.pending.update(|list| {
            for file in files {
                let key = next_key();
                let stage = if file.size() > MAX_ATTACHMENT_BYTES as f64 {
                    FileStage::Failed("This file is larger than 10 MiB, the most a file may be.".into())
                } else {
                    FileStage::Uploading(0)
                };
                let name = file.name();
                if stage == FileStage::Uploading(0) {
                    queued.push((key, file));
                }
                list.push(PendingFile { key, name, stage });
            }
        });
        if queued.is_empty() {
            return;
        }
        spawn_local(async move {
            let Some(thread) = self.ensure_thread().await else {
                let reason =
                    state.error.get_untracked().map_or_else(|| "Could not start a conversation.".into(), |e| e.message);
                for (key, _) in queued {
                    set_stage(state, key, FileStage::Failed(reason.clone()));
                }
                return;
            };
            upload_files(state, thread, queued).await;
        });
    }

    /// Removes a chip before the message is sent; an attached file is deleted from the conversation too.
    pub(super) fn remove_pending(self, key: u64) {
        let state = self.state();
        let Some(file) = state.pending.with_untracked(|files| files.iter().find(|f| f.key == key).cloned()) else {
            return;
        };
        state.pending.update(|files| files.retain(|f| f.key != key));
        match file.stage {
            FileStage::Attached(attachment) => self.remove_file(attachment),
            FileStage::Uploading(_) | FileStage::Reading => {
                CANCELLED.with(|c| c.borrow_mut().insert(key));
            }
            FileStage::Failed(_) => {}
        }
    }

    /// Deletes a file from the conversation (from its chip or the documents panel).
    pub(super) fn remove_file(self, attachment: Attachment) {
        let state = self.state();
        spawn_local(async move {
            match client::delete_attachment(attachment.thread_id, attachment.id).await {
                Ok(()) => {
                    state.files.update(|files| files.retain(|f| f.id != attachment.id));
                    let attached =
                        |f: &PendingFile| matches!(&f.stage, FileStage::Attached(a) if a.id == attachment.id);
                    state.pending.update(|files| files.retain(|f| !attached(f)));
                }
                Err(e) => state.error.set(Some(ErrorNote::new(e.message))),
            }
        });
    }
}

/// Loads the files of the conversation just opened.
pub(super) fn load_files(state: ChatState, thread: Uuid) {
    spawn_local(async move {
        if let Ok(list) = client::list_attachments(thread).await {
            if state.current.get_untracked() == Some(thread) {
                state.files.set(list.attachments);
            }
        }
    });
}

/// Sends the files one after the other, moving each chip along. Loaded when a first file is attached (split out
/// of the main wasm bundle in release builds).
#[lazy]
async fn upload_files(state: ChatState, thread: Uuid, queued: Vec<(u64, web_sys::File)>) {
    for (key, file) in queued {
        if CANCELLED.with(|c| c.borrow_mut().remove(&key)) {
            continue;
        }
        let on_progress = move |share: f64| {
            let stage = if share >= 1.0 { FileStage::Reading } else { FileStage::Uploading((share * 100.0) as u8) };
            set_stage(state, key, stage);
        };
        let result = upload_attachment(thread, &file, on_progress).await;
        if CANCELLED.with(|c| c.borrow_mut().remove(&key)) {
            if let Ok(attachment) = result {
                let _ = client::delete_attachment(thread, attachment.id).await;
            }
            continue;
        }
        match result {
            Ok(attachment) => {
                if state.current.get_untracked() == Some(thread) {
                    state.files.update(|files| files.push(attachment.clone()));
                }
                set_stage(state, key, FileStage::Attached(attachment));
            }
            Err(e) => set_stage(state, key, FileStage::Failed(e.message)),
        }
    }
}
