//! Single sign-on through an OpenID Connect provider (Keycloak, Entra ID, Okta, Google, Authentik...): the
//! authorization code flow with PKCE, as a confidential client when a secret is configured.
//!
//! Discovery reads the provider's metadata and signing keys from `<issuer>/.well-known/openid-configuration`
//! when first needed and again every hour; an ID token signed with a key not seen yet makes it fetch the keys
//! again (at most every [`REFETCH_AFTER`]), so the provider may rotate its keys. The ID token's signature
//! (asymmetric algorithms only), issuer, audience, nonce, expiry and issue time are checked, with
//! [`CLOCK_SKEW`] of tolerance for the provider's clock. The provider is reached without following redirects
//! and within [`PROVIDER_TIMEOUT`].

use std::time::{Duration, Instant};

use base64::Engine;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreJwsSigningAlgorithm, CoreUserInfoClaims};
use openidconnect::{
    AuthorizationCode, ClaimsVerificationError, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, PostLogoutRedirectUrl,
    ProviderMetadataWithLogout, RedirectUrl, Scope, SignatureVerificationError, TokenResponse,
};
use tokio::sync::{Mutex, RwLock};

use crate::config::{Config, OidcConfig};
use store::{SsoFlow, SsoIdentity};

/// How far the provider's clock may be ahead of or behind Quire's.
pub const CLOCK_SKEW: Duration = Duration::from_secs(60);
/// How long the provider may take to answer one request.
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long discovered metadata is used before it is read again.
const METADATA_LIFETIME: Duration = Duration::from_secs(3600);
/// How soon after reading the provider's keys for an unknown one an unknown key may make Quire read them again.
pub const REFETCH_AFTER: Duration = Duration::from_secs(10);
/// The largest user info answer read.
const MAX_USER_INFO_BYTES: usize = 64 * 1024;
/// Where the provider sends the browser back to, under the public URL.
pub const CALLBACK_PATH: &str = "/api/auth/oidc/callback";
/// Where a sign-in through the provider starts.
pub const START_PATH: &str = "/api/auth/oidc/start";
/// The signature algorithms an ID token may use: asymmetric ones only, so that only the provider can sign.
const ALGORITHMS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// Why a sign-in through the provider failed, in the words the sign-in page shows (never the provider's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SsoError {
    /// The provider could not be reached or answered nonsense.
    #[error("the identity provider could not be reached: {0}")]
    Unavailable(String),
    /// The provider refused to give tokens for the code (a used or unknown code, a wrong verifier or secret).
    #[error("the identity provider refused the sign-in: {0}")]
    Refused(String),
    /// The ID token failed a check.
    #[error("the identity provider's ID token is not valid: {0}")]
    InvalidToken(String),
}

/// Who signed in, as the checked ID token (and the user info endpoint, for what the token leaves out) says.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub identity: SsoIdentity,
    /// The name to show for a new account.
    pub display_name: Option<String>,
    /// The values of the groups claim.
    pub groups: Vec<String>,
    /// The ID token itself, which ends the session at the provider later.
    pub id_token: String,
}

/// The provider's metadata as last read.
struct Discovered {
    metadata: ProviderMetadataWithLogout,
    read_at: Instant,
    /// When it was read because an ID token named a key it did not have.
    looked_again_at: Option<Instant>,
}

/// The configured provider and what Quire knows of it.
pub struct Oidc {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    scopes: Vec<String>,
    /// The sign-in button says "Sign in with <label>".
    pub label: String,
    /// Whether a first sign-in makes an account whatever the sign-up mode.
    pub auto_create: bool,
    /// Whether an address the ID token does not say is verified counts as verified.
    trust_email: bool,
    admin_groups: Vec<String>,
    groups_claim: String,
    redirect: RedirectUrl,
    signed_out: PostLogoutRedirectUrl,
    http: reqwest::Client,
    discovered: RwLock<Option<Discovered>>,
    /// Held while the metadata is read, so that requests at once read it once.
    reading: Mutex<()>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("issuer", &self.issuer.as_str())
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

/// Whether `url` is an `https` URL, or an `http` one on this machine (a provider run for tests).
fn is_secure_or_loopback(url: &url::Url) -> bool {
    match (url.scheme(), url.host()) {
        ("https", Some(_)) => true,
        ("http", Some(url::Host::Ipv4(ip))) => ip.is_loopback(),
        ("http", Some(url::Host::Ipv6(ip))) => ip.is_loopback(),
        ("http", Some(url::Host::Domain(name))) => name.eq_ignore_ascii_case("localhost"),
        _ => false,
    }
}

impl Oidc {
    /// The provider the configuration names, checked; `None` when it names none. A setting that cannot work is
    /// an error naming it, which stops Quire at start-up.
    pub fn from_config(config: &Config) -> anyhow::Result<Option<Self>> {
        let oidc: &OidcConfig = &config.oidc;
        let Some(issuer) = oidc.issuer.as_deref().map(str::trim).filter(|i| !i.is_empty()) else {
            if !config.password_login {
                anyhow::bail!("QUIRE_PASSWORD_LOGIN=false needs QUIRE_OIDC_ISSUER: nobody could sign in");
            }
            if oidc.client_id.is_some() {
                anyhow::bail!("QUIRE_OIDC_CLIENT_ID is set but QUIRE_OIDC_ISSUER is not");
            }
            return Ok(None);
        };
        let parsed = url::Url::parse(issuer).map_err(|e| anyhow::anyhow!("QUIRE_OIDC_ISSUER is not a URL: {e}"))?;
        if !is_secure_or_loopback(&parsed) || parsed.query().is_some() || parsed.fragment().is_some() {
            anyhow::bail!(
                "QUIRE_OIDC_ISSUER must be an https URL without query or fragment (http only on this machine), not \
                 {issuer}"
            );
        }
        let client_id = oidc.client_id.as_deref().map(str::trim).filter(|c| !c.is_empty());
        let Some(client_id) = client_id else {
            anyhow::bail!("QUIRE_OIDC_ISSUER is set but QUIRE_OIDC_CLIENT_ID is not: the provider needs to know Quire");
        };
        let client_secret = oidc.client_secret()?.map(ClientSecret::new);
        let Some(public) = config.public_url.as_ref() else {
            anyhow::bail!(
                "single sign-on needs QUIRE_PUBLIC_URL: the provider sends people back to \
                 <QUIRE_PUBLIC_URL>{CALLBACK_PATH}, which must be registered with it"
            );
        };
        let redirect = RedirectUrl::new(format!("{}{CALLBACK_PATH}", public.origin()))?;
        let signed_out = PostLogoutRedirectUrl::new(format!("{}/signin", public.origin()))?;
        let mut scopes: Vec<String> =
            oidc.scopes.split([' ', ',']).filter(|s| !s.is_empty()).map(str::to_owned).collect();
        scopes.retain(|s| s != "openid");
        let label = oidc.label.trim();
        if label.is_empty() || label.chars().count() > 60 {
            anyhow::bail!("QUIRE_OIDC_LABEL must be 1 to 60 characters");
        }
        let http = reqwest::Client::builder()
            // Following redirects would let the provider's answers send Quire's requests anywhere.
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .connect_timeout(PROVIDER_TIMEOUT / 2)
            .user_agent(concat!("quire/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Some(Self {
            // The issuer as configured: the provider's metadata must name exactly it (discovery checks).
            issuer: IssuerUrl::new(issuer.to_owned())?,
            client_id: ClientId::new(client_id.to_owned()),
            client_secret,
            scopes,
            label: label.to_owned(),
            auto_create: oidc.auto_create,
            trust_email: oidc.trust_email,
            admin_groups: oidc.admin_groups.iter().map(|g| g.trim().to_owned()).filter(|g| !g.is_empty()).collect(),
            groups_claim: oidc.groups_claim.trim().to_owned(),
            redirect,
            signed_out,
            http,
            discovered: RwLock::new(None),
            reading: Mutex::new(()),
        }))
    }

    /// The provider's metadata: as read within the hour, else read now. `again` reads it anew (a key is
    /// missing), unless it was read within [`REFETCH_AFTER`].
    async fn metadata(&self, again: bool) -> Result<ProviderMetadataWithLogout, SsoError> {
        // Fresh: read within the hour and, when a key is missing, read anew for that within the last moments.
        let fresh = |found: &Option<Discovered>| {
            found.as_ref().and_then(|d| {
                let recent_look = d.looked_again_at.is_some_and(|at| at.elapsed() < REFETCH_AFTER);
                (d.read_at.elapsed() < METADATA_LIFETIME && (!again || recent_look)).then(|| d.metadata.clone())
            })
        };
        if let Some(metadata) = fresh(&*self.discovered.read().await) {
            return Ok(metadata);
        }
        let _reading = self.reading.lock().await;
        // Another request may have read it while this one waited.
        if let Some(metadata) = fresh(&*self.discovered.read().await) {
            return Ok(metadata);
        }
        let metadata = ProviderMetadataWithLogout::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|e| SsoError::Unavailable(error_chain(&e)))?;
        let now = Instant::now();
        let looked_again_at = again.then_some(now);
        *self.discovered.write().await = Some(Discovered { metadata: metadata.clone(), read_at: now, looked_again_at });
        Ok(metadata)
    }

    /// A client of the provider as its metadata describes it.
    fn client(&self, metadata: ProviderMetadataWithLogout) -> ProviderClient {
        CoreClient::from_provider_metadata(metadata, self.client_id.clone(), self.client_secret.clone())
            .set_redirect_uri(self.redirect.clone())
    }

    /// Where to send the browser to sign in, and the sign-in under way to keep until it comes back to
    /// [`CALLBACK_PATH`] (then to go to `next`).
    pub async fn start(&self, next: String) -> Result<(url::Url, SsoFlow), SsoError> {
        let metadata = self.metadata(false).await?;
        let client = self.client(metadata);
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request =
            client.authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random);
        for scope in &self.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        let flow = SsoFlow {
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
            next,
            created_at: store::now(),
        };
        Ok((url, flow))
    }

    /// Trades the code the provider sent back for tokens and checks the ID token against the sign-in `flow`.
    pub async fn finish(&self, flow: &SsoFlow, code: String) -> Result<SignedIn, SsoError> {
        let metadata = self.metadata(false).await?;
        let client = self.client(metadata);
        let exchange = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|e| SsoError::Unavailable(format!("the provider names no token endpoint: {e}")))?
            .set_pkce_verifier(PkceCodeVerifier::new(flow.verifier.clone()));
        let tokens = exchange.request_async(&self.http).await.map_err(|e| match e {
            openidconnect::RequestTokenError::ServerResponse(refusal) => SsoError::Refused(refusal.to_string()),
            other => SsoError::Unavailable(error_chain(&other)),
        })?;
        let id_token = tokens.id_token().ok_or_else(|| SsoError::InvalidToken("no ID token came".into()))?;
        let nonce = Nonce::new(flow.nonce.clone());
        let claims = match Self::check(&client, id_token, &nonce) {
            Err(ClaimsVerificationError::SignatureVerification(SignatureVerificationError::NoMatchingKey)) => {
                // The provider may have rotated its keys since they were read.
                let client = self.client(self.metadata(true).await?);
                Self::check(&client, id_token, &nonce)
            }
            checked => checked,
        }
        .map_err(|e| SsoError::InvalidToken(e.to_string()))?;
        let raw = id_token.to_string();
        let mut email = claims.email().map(|e| e.as_str().trim().to_lowercase());
        let mut email_verified = claims.email_verified().unwrap_or(self.trust_email);
        let mut display_name = claims.name().and_then(|n| n.get(None)).map(|n| n.as_str().to_owned());
        let subject = claims.subject().as_str().to_owned();
        let mut groups = payload(&raw).map(|claims| self.groups_in(&claims)).unwrap_or_default();
        // Some providers keep the address and groups to the user info endpoint.
        if email.is_none() || (groups.is_empty() && !self.admin_groups.is_empty()) {
            if let Some(info) = self.user_info(&client, tokens.access_token(), &subject).await? {
                if email.is_none() {
                    email = info.0.email().map(|e| e.as_str().trim().to_lowercase());
                    email_verified = info.0.email_verified().unwrap_or(self.trust_email);
                }
                display_name = display_name.or_else(|| info.0.name().and_then(|n| n.get(None)).map(|n| n.to_string()));
                if groups.is_empty() {
                    groups = self.groups_in(&info.1);
                }
            }
        }
        let identity = SsoIdentity { issuer: self.issuer.as_str().to_owned(), subject, email, email_verified };
        Ok(SignedIn { identity, display_name, groups, id_token: raw })
    }

    /// The ID token's claims, checked with the keys `client` knows.
    fn check<'t>(
        client: &ProviderClient,
        id_token: &'t openidconnect::core::CoreIdToken,
        nonce: &Nonce,
    ) -> Result<&'t openidconnect::core::CoreIdTokenClaims, ClaimsVerificationError> {
        let skew = chrono::Duration::from_std(CLOCK_SKEW).unwrap_or_default();
        let verifier = client
            .id_token_verifier()
            .set_allowed_algs(ALGORITHMS)
            // An expiry up to the skew ago still passes; an issue time more than the skew ahead does not.
            .set_time_fn(move || chrono::Utc::now() - skew)
            .set_issue_time_verifier_fn(move |issued| {
                if issued > chrono::Utc::now() + skew {
                    Err(format!("issued in the future ({issued})"))
                } else {
                    Ok(())
                }
            });
        id_token.claims(&verifier, nonce)
    }

    /// The user info endpoint's claims for `subject` (which it must name), as parsed and as raw JSON; `None`
    /// when the provider has no such endpoint.
    async fn user_info(
        &self,
        client: &ProviderClient,
        access_token: &openidconnect::AccessToken,
        subject: &str,
    ) -> Result<Option<(CoreUserInfoClaims, serde_json::Value)>, SsoError> {
        let Some(endpoint) = client.user_info_url() else { return Ok(None) };
        let response = self
            .http
            .get(endpoint.url().clone())
            .bearer_auth(access_token.secret())
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| SsoError::Unavailable(error_chain(&e)))?;
        if !response.status().is_success() {
            return Err(SsoError::Refused(format!("user info answered {}", response.status())));
        }
        // Read up to a bound: a provider's answer about one person is a few hundred bytes.
        let mut response = response;
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| SsoError::Unavailable(error_chain(&e)))? {
            if bytes.len() + chunk.len() > MAX_USER_INFO_BYTES {
                return Err(SsoError::Unavailable("the user info answer is too large".into()));
            }
            bytes.extend_from_slice(&chunk);
        }
        let raw: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|_| SsoError::Unavailable("the user info endpoint answered something other than JSON".into()))?;
        let expected = openidconnect::SubjectIdentifier::new(subject.to_owned());
        let claims = CoreUserInfoClaims::from_json::<std::io::Error>(&bytes, Some(&expected))
            .map_err(|e| SsoError::InvalidToken(format!("user info: {e}")))?;
        Ok(Some((claims, raw)))
    }

    /// The values of the configured groups claim in `claims` (a list of strings or one string; a dotted name
    /// reaches into objects, as Keycloak's `realm_access.roles`).
    fn groups_in(&self, claims: &serde_json::Value) -> Vec<String> {
        let found = self.groups_claim.split('.').try_fold(claims, |value, key| value.get(key));
        match found {
            Some(serde_json::Value::Array(values)) => {
                values.iter().filter_map(|v| v.as_str()).map(str::to_owned).collect()
            }
            Some(serde_json::Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        }
    }

    /// Whether these groups make an administrator; `None` when no groups are configured to (roles are then
    /// Quire's own).
    pub fn administers(&self, groups: &[String]) -> Option<bool> {
        (!self.admin_groups.is_empty()).then(|| groups.iter().any(|g| self.admin_groups.contains(g)))
    }

    /// Where to send the browser to end its session at the provider too, when the provider says where:
    /// with the ID token as a hint and back to Quire's sign-in page afterwards.
    pub async fn end_session_url(&self, id_token: &str) -> Option<String> {
        let metadata = self.metadata(false).await.ok()?;
        let endpoint = metadata.additional_metadata().end_session_endpoint.clone()?;
        let mut url = endpoint.url().clone();
        url.query_pairs_mut()
            .append_pair("id_token_hint", id_token)
            .append_pair("client_id", self.client_id.as_str())
            .append_pair("post_logout_redirect_uri", self.signed_out.as_str());
        Some(url.to_string())
    }
}

/// A client of the provider, made from its metadata.
type ProviderClient =
    CoreClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointMaybeSet, EndpointMaybeSet>;

/// The payload of a JWT whose signature was checked already, as JSON.
fn payload(jwt: &str) -> Option<serde_json::Value> {
    let part = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// An error with its causes, for the log.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[&str]) -> Config {
        use clap::Parser;
        Config::try_parse_from(std::iter::once("quire").chain(vars.iter().copied())).unwrap()
    }

    fn refusal(vars: &[&str]) -> String {
        Oidc::from_config(&config(vars)).unwrap_err().to_string()
    }

    #[test]
    fn settings_that_cannot_work_are_named() {
        assert!(Oidc::from_config(&config(&[])).unwrap().is_none(), "no provider by default");
        let public = ["--public-url", "https://quire.example.org"];
        let with = |extra: &[&'static str]| -> Vec<&'static str> { public.iter().chain(extra).copied().collect() };
        assert!(refusal(&with(&["--oidc-issuer", "http://login.example.org"])).contains("QUIRE_OIDC_ISSUER"));
        assert!(refusal(&with(&["--oidc-issuer", "not a url"])).contains("QUIRE_OIDC_ISSUER"));
        assert!(refusal(&with(&["--oidc-issuer", "https://login.example.org"])).contains("QUIRE_OIDC_CLIENT_ID"));
        assert!(refusal(&with(&["--oidc-client-id", "quire"])).contains("QUIRE_OIDC_ISSUER"));
        assert!(refusal(&with(&["--password-login", "false"])).contains("QUIRE_PASSWORD_LOGIN"));
        let no_public = ["--oidc-issuer", "https://login.example.org", "--oidc-client-id", "quire"];
        assert!(refusal(&no_public).contains("QUIRE_PUBLIC_URL"));
        let both_secrets = with(&[
            "--oidc-issuer",
            "https://login.example.org",
            "--oidc-client-id",
            "quire",
            "--oidc-client-secret",
            "s",
            "--oidc-client-secret-file",
            "/nonexistent",
        ]);
        assert!(refusal(&both_secrets).contains("QUIRE_OIDC_CLIENT_SECRET"));
        let missing_file = with(&[
            "--oidc-issuer",
            "https://login.example.org",
            "--oidc-client-id",
            "quire",
            "--oidc-client-secret-file",
            "/nonexistent/secret",
        ]);
        assert!(refusal(&missing_file).contains("QUIRE_OIDC_CLIENT_SECRET_FILE"));

        let loopback = ["--public-url", "http://127.0.0.1:3000", "--oidc-issuer", "http://127.0.0.1:9000/oidc"];
        let oidc = Oidc::from_config(&config(
            &[&loopback[..], &["--oidc-client-id", "quire", "--oidc-label", "Acme"]].concat(),
        ))
        .unwrap()
        .expect("a provider on this machine may use http");
        assert_eq!(oidc.label, "Acme");
        assert_eq!(oidc.redirect.as_str(), "http://127.0.0.1:3000/api/auth/oidc/callback");
        assert_eq!(oidc.scopes, ["email", "profile"], "openid is always asked for");
    }

    #[test]
    fn groups_are_read_from_the_configured_claim() {
        let vars = [
            "--public-url",
            "https://quire.example.org",
            "--oidc-issuer",
            "https://login.example.org",
            "--oidc-client-id",
            "quire",
            "--oidc-admin-groups",
            "quire-admins,ops",
            "--oidc-groups-claim",
            "realm_access.roles",
        ];
        let oidc = Oidc::from_config(&config(&vars)).unwrap().unwrap();
        let claims = serde_json::json!({ "realm_access": { "roles": ["staff", "ops"] }, "groups": ["quire-admins"] });
        let groups = oidc.groups_in(&claims);
        assert_eq!(groups, ["staff", "ops"]);
        assert_eq!(oidc.administers(&groups), Some(true));
        assert_eq!(oidc.administers(&["staff".to_owned()]), Some(false));
        let without = Oidc::from_config(&config(&vars[..6])).unwrap().unwrap();
        assert_eq!(without.administers(&groups), None, "no admin groups: roles stay Quire's");
    }
}
