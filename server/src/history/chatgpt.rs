//! ChatGPT's `conversations.json`: the part of its format an import reads. Every field not named here is skipped
//! while parsing, without being kept in memory; the ones named are read from objects only (see
//! [`wire::objects`]).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;
use wire::objects;

/// One conversation: a tree of messages (`mapping`, by node id) and the node the person last saw.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ChatGptConversation)]
pub struct Conversation {
    #[serde(default)]
    pub title: Option<String>,
    /// Seconds since the epoch.
    #[serde(default)]
    pub create_time: Option<f64>,
    /// Seconds since the epoch.
    #[serde(default)]
    pub update_time: Option<f64>,
    #[serde(deserialize_with = "objects::values")]
    pub mapping: HashMap<String, Node>,
    /// The id of the last node of the branch to import.
    pub current_node: String,
    #[serde(default)]
    pub is_archived: Option<bool>,
}

/// A node of the message tree.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ChatGptNode)]
pub struct Node {
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default, deserialize_with = "objects::optional")]
    pub message: Option<Message>,
}

/// A message of a node.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ChatGptMessage)]
pub struct Message {
    #[serde(default, deserialize_with = "objects::optional")]
    pub author: Option<Author>,
    /// Seconds since the epoch.
    #[serde(default)]
    pub create_time: Option<f64>,
    #[serde(default, deserialize_with = "objects::optional")]
    pub content: Option<Content>,
    #[serde(default, deserialize_with = "objects::optional")]
    pub metadata: Option<Metadata>,
}

/// Who wrote a message: `user` and `assistant` are imported, other roles (system, tool) are not.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ChatGptAuthor)]
pub struct Author {
    #[serde(default)]
    pub role: Option<String>,
}

/// A message's content: its text parts (and others, such as images, which are left out).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ChatGptContent)]
pub struct Content {
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub parts: Vec<Value>,
}

/// What an import reads of a message's metadata.
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = ChatGptMetadata)]
pub struct Metadata {
    #[serde(default)]
    pub model_slug: Option<String>,
    #[serde(default)]
    pub is_visually_hidden_from_conversation: Option<bool>,
}

impl Conversation {
    /// The nodes from the root to `current_node`, in order; `Err` with the reason when a node points at a
    /// missing one or the parents form a cycle.
    pub fn current_branch(&self) -> Result<Vec<(&str, &Node)>, &'static str> {
        let mut path = Vec::new();
        let mut next = Some(self.current_node.as_str());
        while let Some(id) = next {
            if path.len() >= self.mapping.len() {
                return Err("the message tree has a cycle");
            }
            let node = self.mapping.get(id).ok_or("a node points at a missing node")?;
            path.push((id, node));
            next = node.parent.as_deref();
        }
        path.reverse();
        Ok(path)
    }
}

impl Conversation {
    /// Every node, each after its parent (a depth-first walk from the roots, siblings oldest first), with its
    /// parent's id; `Err` with the reason when a node points at a missing one or the parents form a cycle.
    pub fn tree(&self) -> Result<Vec<(&str, &Node)>, &'static str> {
        let mut children: HashMap<Option<&str>, Vec<(&str, &Node)>> = HashMap::new();
        for (id, node) in &self.mapping {
            if let Some(parent) = node.parent.as_deref() {
                if !self.mapping.contains_key(parent) {
                    return Err("a node points at a missing node");
                }
            }
            children.entry(node.parent.as_deref()).or_default().push((id.as_str(), node));
        }
        let time = |node: &Node| node.message.as_ref().and_then(|m| m.create_time).unwrap_or(0.0);
        for siblings in children.values_mut() {
            // Newest first on the stack below, so the oldest is walked first.
            siblings.sort_by(|a, b| time(b.1).total_cmp(&time(a.1)).then(b.0.cmp(a.0)));
        }
        let mut order = Vec::with_capacity(self.mapping.len());
        let mut stack: Vec<(&str, &Node)> = children.get(&None).cloned().unwrap_or_default();
        while let Some((id, node)) = stack.pop() {
            order.push((id, node));
            stack.extend(children.get(&Some(id)).into_iter().flatten().copied());
        }
        // A node no root leads to is on a cycle.
        if order.len() < self.mapping.len() {
            return Err("the message tree has a cycle");
        }
        Ok(order)
    }
}

impl Message {
    /// The role, if it is one Quire keeps.
    pub fn role(&self) -> Option<&str> {
        self.author.as_ref()?.role.as_deref()
    }

    /// Whether ChatGPT hides it (its own system prompts).
    pub fn hidden(&self) -> bool {
        self.metadata.as_ref().and_then(|m| m.is_visually_hidden_from_conversation) == Some(true)
    }

    /// The visible text: the string parts, one per line, trimmed.
    pub fn text(&self) -> String {
        let parts = self.content.iter().flat_map(|c| c.parts.iter()).filter_map(Value::as_str);
        parts.collect::<Vec<_>>().join("\n").trim().to_string()
    }

    /// The model that wrote it, as ChatGPT names it.
    pub fn model(&self) -> Option<&str> {
        self.metadata.as_ref()?.model_slug.as_deref()
    }
}

/// Seconds since the epoch (ChatGPT's times) as a time, if it is one between 1970 and about 5100.
pub fn epoch_seconds(seconds: Option<f64>) -> Option<DateTime<Utc>> {
    let seconds = seconds.filter(|s| s.is_finite() && *s >= 0.0 && *s < 1.0e11)?;
    DateTime::from_timestamp_micros((seconds * 1_000_000.0).round() as i64)
}
