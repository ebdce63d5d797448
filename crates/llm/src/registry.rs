//! The models people may choose from: named providers (from `QUIRE_CONFIG`, or the one provider of the
//! environment), each offering models whose ids are `provider/model`. A provider's own list of models is asked for
//! when the file lists none and kept for [`LIST_TTL`]; once stale it is still answered while one request in the
//! background asks for it again (a turn never waits for a provider's list, except for the very first one), and a
//! failed refresh keeps the last list it had. The provider of a model is built once, when the model is first used.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, RwLock,
    },
    time::Duration,
};

use futures::StreamExt;
use serde::Deserialize;
use tokio::time::Instant;

use super::{anthropic, builtin, openai, retry, ApiKey, Endpoint, EventStream, LlmError, Provider};
pub use crate::models_file::valid_model_name;
use crate::models_file::{ModelsConfig, ProviderSettings};
use crate::ProviderKind;

/// How long a provider's list of models is kept before it is asked for again.
pub const LIST_TTL: Duration = Duration::from_secs(600);
/// How long a failed listing waits before the provider is asked again.
const RETRY_FAILED_LIST: Duration = Duration::from_secs(30);
/// Largest model-list response read from a provider.
const MAX_LIST_BYTES: usize = 1024 * 1024;
/// Most models taken from one provider's list.
const MAX_LISTED_MODELS: usize = 500;
/// How long asking a provider for its models may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Wraps every provider the registry builds (metrics measure each).
pub type Layer = Arc<dyn Fn(Arc<dyn Provider>) -> Arc<dyn Provider> + Send + Sync>;

/// How a provider's models are answered.
enum Source {
    Builtin {
        delay: Duration,
    },
    OpenAi {
        base_url: String,
        api_key: Option<ApiKey>,
        calls_in_text: bool,
    },
    Anthropic {
        base_url: String,
        api_key: Option<ApiKey>,
    },
    /// One provider built elsewhere (the environment's, or a test's), offering its one model.
    Given(Arc<dyn Provider>),
}

/// The last list of models a provider gave, and when it is to be asked again.
struct Cached {
    models: Arc<Vec<String>>,
    until: Instant,
}

/// One named provider.
struct Named {
    name: String,
    source: Source,
    /// The file's fixed list; `None` when the provider is asked.
    fixed: Option<Arc<Vec<String>>>,
    cached: RwLock<Option<Cached>>,
    /// Held while the provider is asked for its models: one request at a time.
    refreshing: tokio::sync::Mutex<()>,
    /// Set while a refresh of a stale list is on its way in the background.
    pending: AtomicBool,
}

/// The named providers, the default model, and the providers built so far by model id.
pub struct Registry {
    providers: Vec<Arc<Named>>,
    default: String,
    built: RwLock<HashMap<String, Arc<dyn Provider>>>,
    layer: Option<Layer>,
    http: reqwest::Client,
    list_ttl: Duration,
    /// Certificates the remote providers of the file may be signed by, besides the public roots.
    ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.providers.iter().map(|p| p.name.as_str()).collect();
        f.debug_struct("Registry").field("providers", &names).field("default", &self.default).finish()
    }
}

/// One model on offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// `provider/model`.
    pub id: String,
    pub provider: String,
    pub model: String,
}

impl Registry {
    /// One provider, named after its kind, offering its one model (the set-up of the environment variables).
    pub fn single(provider: Arc<dyn Provider>) -> Self {
        let name = provider.name().to_string();
        let model = provider.model().to_string();
        let default = format!("{name}/{model}");
        Self::build(vec![Arc::new(Named::new(name, Source::Given(provider), Some(vec![model])))], default, None)
    }

    /// The providers of a providers file. Remote providers retry failures that happen before the first token.
    pub fn from_file(config: &ModelsConfig, builtin_delay: Duration, ca_file: Option<PathBuf>) -> Self {
        let providers = config
            .providers
            .iter()
            .map(|p| {
                let ProviderSettings { name, kind, base_url, api_key, models, tool_calls_in_text } = p.clone();
                let source = match kind {
                    ProviderKind::Builtin => Source::Builtin { delay: builtin_delay },
                    ProviderKind::Openai => Source::OpenAi {
                        base_url: base_url.unwrap_or_else(|| openai::DEFAULT_BASE_URL.into()),
                        api_key,
                        calls_in_text: tool_calls_in_text,
                    },
                    ProviderKind::Anthropic => Source::Anthropic {
                        base_url: base_url.unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.into()),
                        api_key,
                    },
                };
                let fixed = models
                    .or_else(|| (kind == ProviderKind::Builtin).then(|| vec![builtin::DEFAULT_MODEL.to_string()]));
                Arc::new(Named::new(name, source, fixed))
            })
            .collect();
        Self::build(providers, config.default_model.clone(), ca_file)
    }

    fn build(providers: Vec<Arc<Named>>, default: String, ca_file: Option<PathBuf>) -> Self {
        let mut http = reqwest::Client::builder()
            .connect_timeout(LIST_TIMEOUT)
            .timeout(LIST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none());
        // Lists are asked of the same endpoints as answers: behind a private certificate authority too.
        if let Some(path) = &ca_file {
            match super::transport::extra_roots(path) {
                Ok(roots) => http = roots.into_iter().fold(http, |http, root| http.add_root_certificate(root)),
                Err(e) => tracing::warn!(error = %e, "QUIRE_LLM_CA_FILE is not used for model lists"),
            }
        }
        let http = http.build().unwrap_or_default();
        Self { providers, default, built: RwLock::new(HashMap::new()), layer: None, http, list_ttl: LIST_TTL, ca_file }
    }

    /// Keeps providers' lists of models for `ttl` instead of [`LIST_TTL`].
    pub fn with_list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }

    /// Wraps every provider built from now on in `layer`.
    pub fn with_layer(mut self, layer: Layer) -> Self {
        self.layer = Some(layer);
        self
    }

    /// The default model's id.
    pub fn default_model(&self) -> &str {
        &self.default
    }

    /// The provider of the default model.
    pub fn default_provider(&self) -> Arc<dyn Provider> {
        // A registry is only made from a checked file or one provider: the default always has its provider.
        self.provider_for(&self.default)
            .unwrap_or_else(|| unreachable!("the default model {} has no provider", self.default))
    }

    /// Every model on offer, provider by provider in the file's order.
    pub async fn models(&self) -> Vec<Offered> {
        let mut all = Vec::new();
        let lists = futures::future::join_all(self.providers.iter().map(|p| self.list(p))).await;
        for (named, models) in self.providers.iter().zip(lists) {
            all.extend(models.iter().map(|model| Offered {
                id: format!("{}/{model}", named.name),
                provider: named.name.clone(),
                model: model.clone(),
            }));
        }
        all
    }

    /// Whether `id` names a model on offer (the default always is).
    pub async fn knows(&self, id: &str) -> bool {
        if id == self.default {
            return true;
        }
        let Some((name, model)) = id.split_once('/') else { return false };
        match self.providers.iter().find(|p| p.name == name) {
            Some(named) => self.list(named).await.iter().any(|m| m == model),
            None => false,
        }
    }

    /// The provider of the first of `choices` still on offer, or of the default model.
    pub async fn choose(&self, choices: &[Option<&str>]) -> Arc<dyn Provider> {
        for id in choices.iter().flatten() {
            // Asked first even for a model answering already: one its provider dropped from its list gives way.
            if !self.knows(id).await {
                continue;
            }
            if let Some(provider) = self.provider_for(id) {
                return provider;
            }
        }
        self.default_provider()
    }

    /// The provider of the model `id` (`provider/model`), built now if it was not yet; `None` when no provider has
    /// the name.
    fn provider_for(&self, id: &str) -> Option<Arc<dyn Provider>> {
        if let Some(provider) = self.built.read().unwrap_or_else(|e| e.into_inner()).get(id) {
            return Some(provider.clone());
        }
        let (name, model) = id.split_once('/')?;
        let named = self.providers.iter().find(|p| p.name == name)?;
        Some(self.instantiate(named, model))
    }

    /// The provider answering with `model` of `named`, built now if it was not yet.
    fn instantiate(&self, named: &Named, model: &str) -> Arc<dyn Provider> {
        let id = format!("{}/{model}", named.name);
        let provider: Arc<dyn Provider> = match &named.source {
            Source::Given(provider) => provider.clone(),
            Source::Builtin { delay } => {
                Arc::new(Renamed::new(&named.name, builtin::Builtin::new().with_delay(*delay).with_model(model)))
            }
            Source::OpenAi { base_url, api_key, calls_in_text } => {
                let endpoint = Endpoint {
                    api_key: api_key.clone(),
                    ca_file: self.ca_file.clone(),
                    ..Endpoint::new(base_url.clone(), model)
                };
                let provider = openai::OpenAiProvider::new(openai::OpenAiConfig::at(endpoint))
                    .map(|provider| provider.calls_in_text(*calls_in_text));
                remote(&named.name, model, provider)
            }
            Source::Anthropic { base_url, api_key } => {
                let endpoint = Endpoint {
                    api_key: api_key.clone(),
                    ca_file: self.ca_file.clone(),
                    ..Endpoint::new(base_url.clone(), model)
                };
                remote(&named.name, model, anthropic::AnthropicProvider::new(anthropic::AnthropicConfig::at(endpoint)))
            }
        };
        let provider = match &self.layer {
            Some(layer) => layer(provider),
            None => provider,
        };
        let mut built = self.built.write().unwrap_or_else(|e| e.into_inner());
        built.entry(id).or_insert(provider).clone()
    }

    /// The models of one provider: its fixed list, or its own list as last read. A stale list is answered as it is
    /// while one background request asks for it again; only the first list of all is waited for.
    async fn list(&self, named: &Arc<Named>) -> Arc<Vec<String>> {
        if let Some(fixed) = &named.fixed {
            return fixed.clone();
        }
        match named.last() {
            Some((models, true)) => models,
            Some((models, false)) => {
                if !named.pending.swap(true, Ordering::AcqRel) {
                    let (http, named, ttl) = (self.http.clone(), named.clone(), self.list_ttl);
                    tokio::spawn(async move {
                        refresh(&http, &named, ttl).await;
                        named.pending.store(false, Ordering::Release);
                    });
                }
                models
            }
            None => refresh(&self.http, named, self.list_ttl).await,
        }
    }

    /// Waits until no provider's list is being asked for in the background.
    #[doc(hidden)]
    pub async fn until_refreshed(&self) {
        while self.providers.iter().any(|p| p.pending.load(Ordering::Acquire)) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Asks `named` for its list, one request at a time, and keeps it for `ttl` (a failure keeps the last list and asks
/// again sooner).
async fn refresh(http: &reqwest::Client, named: &Named, ttl: Duration) -> Arc<Vec<String>> {
    let _one_at_a_time = named.refreshing.lock().await;
    // Another request may have refreshed it while this one waited.
    if let Some((fresh, true)) = named.last() {
        return fresh;
    }
    let listed = tokio::time::timeout(LIST_TIMEOUT, ask(http, named)).await.unwrap_or(Err(LlmError::Timeout));
    let mut cached = named.cached.write().unwrap_or_else(|e| e.into_inner());
    match listed {
        Ok(models) => {
            let models = Arc::new(models);
            *cached = Some(Cached { models: models.clone(), until: Instant::now() + ttl });
            models
        }
        Err(e) => {
            tracing::warn!(provider = %named.name, error = %e, "listing the provider's models failed");
            let last = cached.as_ref().map(|c| c.models.clone()).unwrap_or_default();
            let retry = RETRY_FAILED_LIST.min(ttl.max(Duration::from_millis(1)));
            *cached = Some(Cached { models: last.clone(), until: Instant::now() + retry });
            last
        }
    }
}

/// Asks a provider for its models.
async fn ask(http: &reqwest::Client, named: &Named) -> Result<Vec<String>, LlmError> {
    let request = match &named.source {
        Source::OpenAi { base_url, api_key, .. } => {
            let request = http.get(super::transport::join_url(base_url, "models"));
            match api_key {
                Some(key) => request.bearer_auth(key.expose()),
                None => request,
            }
        }
        Source::Anthropic { base_url, api_key } => {
            let request = http
                .get(super::transport::join_url(base_url, "v1/models?limit=1000"))
                .header("anthropic-version", anthropic::API_VERSION);
            match api_key {
                Some(key) => request.header("x-api-key", super::transport::secret_header(key.expose(), "anthropic")?),
                None => request,
            }
        }
        Source::Builtin { .. } => return Ok(vec![builtin::DEFAULT_MODEL.to_string()]),
        Source::Given(provider) => return Ok(vec![provider.model().to_string()]),
    };
    let response = request.send().await.map_err(|e| LlmError::Network(super::transport::describe(&e)))?;
    if !response.status().is_success() {
        return Err(LlmError::Upstream { status: response.status().as_u16() });
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| LlmError::Network(super::transport::describe(&e)))?;
        if body.len() + chunk.len() > MAX_LIST_BYTES {
            return Err(LlmError::Protocol("the list of models is too large".into()));
        }
        body.extend_from_slice(&chunk);
    }
    parse_list(&body)
}

impl Named {
    fn new(name: String, source: Source, fixed: Option<Vec<String>>) -> Self {
        Self {
            name,
            source,
            fixed: fixed.map(Arc::new),
            cached: RwLock::new(None),
            refreshing: tokio::sync::Mutex::new(()),
            pending: AtomicBool::new(false),
        }
    }

    /// The list as last read, and whether it is still fresh.
    fn last(&self) -> Option<(Arc<Vec<String>>, bool)> {
        let cached = self.cached.read().unwrap_or_else(|e| e.into_inner());
        cached.as_ref().map(|c| (c.models.clone(), c.until > Instant::now()))
    }
}

/// The model ids of a `{"data": [{"id": ...}]}` list (OpenAI's and Anthropic's shape): at most
/// [`MAX_LISTED_MODELS`], each a valid name, each once.
pub fn parse_list(body: &[u8]) -> Result<Vec<String>, LlmError> {
    #[derive(Deserialize)]
    struct List {
        data: Vec<Entry>,
    }
    #[derive(Deserialize)]
    struct Entry {
        id: serde_json::Value,
    }
    let list: List =
        serde_json::from_slice(body).map_err(|e| LlmError::Protocol(format!("the list of models: {e}")))?;
    let mut models: Vec<String> = Vec::new();
    for entry in list.data {
        let Some(id) = entry.id.as_str() else { continue };
        if valid_model_name(id) && !models.iter().any(|m| m == id) {
            models.push(id.to_string());
        }
        if models.len() == MAX_LISTED_MODELS {
            break;
        }
    }
    Ok(models)
}

/// A remote provider answering under its configured name with retries, or, when it could not be built, one that
/// fails every call with why.
fn remote<P: Provider + 'static>(name: &str, model: &str, built: Result<P, LlmError>) -> Arc<dyn Provider> {
    match built {
        Ok(provider) => {
            Arc::new(Renamed::new(name, retry::RetryingProvider::new(provider, retry::RetryPolicy::default())))
        }
        Err(e) => Arc::new(Broken::new(name, model, e)),
    }
}

/// A provider answering under its configured name (traces and metrics tell two providers of a kind apart).
#[derive(Debug)]
struct Renamed<P> {
    name: String,
    inner: P,
}

impl<P> Renamed<P> {
    fn new(name: &str, inner: P) -> Self {
        Self { name: name.to_string(), inner }
    }
}

#[async_trait::async_trait]
impl<P: Provider> Provider for Renamed<P> {
    fn name(&self) -> &str {
        &self.name
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    async fn stream(&self, request: super::ChatRequest) -> Result<EventStream, LlmError> {
        self.inner.stream(request).await
    }
    fn names_threads(&self) -> bool {
        self.inner.names_threads()
    }
    fn habits(&self) -> Option<&super::Habits> {
        self.inner.habits()
    }
    fn can_force_tool(&self) -> bool {
        self.inner.can_force_tool()
    }
}

/// A provider that could not be built (an unreadable certificate file): every call fails with why.
#[derive(Debug)]
struct Broken {
    name: String,
    model: String,
    error: LlmError,
}

impl Broken {
    fn new(name: &str, model: &str, error: LlmError) -> Self {
        tracing::error!(provider = name, model, error = %error, "the model provider could not be set up");
        Self { name: name.to_string(), model: model.to_string(), error }
    }
}

#[async_trait::async_trait]
impl Provider for Broken {
    fn name(&self) -> &str {
        &self.name
    }
    fn model(&self) -> &str {
        &self.model
    }
    async fn stream(&self, _: super::ChatRequest) -> Result<EventStream, LlmError> {
        Err(self.error.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_lists_are_bounded_and_checked() {
        let body = br#"{"data":[{"id":"gpt-4o"},{"id":"gpt-4o"},{"id":"has space"},{"id":7},{"id":"o3-mini","x":1}]}"#;
        assert_eq!(parse_list(body).unwrap(), vec!["gpt-4o".to_string(), "o3-mini".to_string()]);
        assert!(parse_list(b"[]").is_err());
        let many = format!(
            r#"{{"data":[{}]}}"#,
            (0..600).map(|i| format!(r#"{{"id":"m{i}"}}"#)).collect::<Vec<_>>().join(",")
        );
        assert_eq!(parse_list(many.as_bytes()).unwrap().len(), MAX_LISTED_MODELS);
    }
}
