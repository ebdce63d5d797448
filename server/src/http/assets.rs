//! The site's static files, compressed at build time and served by content negotiation, cached for a year when
//! their name carries a hash of their content. Anything that is not a file is a page rendered by the app.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::{
    body::Body,
    extract::{Request, State},
    http::{header, request::Parts, HeaderValue, Method, StatusCode},
    response::{IntoResponse, Response},
};
use tower::ServiceExt;
use tower_http::services::ServeDir;

use crate::AppState;

/// Extensions of files worth compressing; images in other formats and fonts are compressed already.
const COMPRESSIBLE: &[&str] = &["wasm", "js", "mjs", "css", "html", "svg", "json", "txt", "map", "xml", "ico"];

/// Smaller files are sent as they are: compression would save less than its headers cost.
const MIN_COMPRESS_BYTES: u64 = 1024;

/// Cache lifetime of a file whose name carries a hash of its content: any change gives it a new name.
const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// Other static files may change under the same name: caches keep them but ask first (a 304 is cheap).
const REVALIDATE: &str = "no-cache";

/// What [`precompress`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Precompressed {
    /// Files given a `.br` and a `.gz` beside them.
    pub files: usize,
    /// Files already up to date, too small, or not worth compressing.
    pub skipped: usize,
    pub original_bytes: u64,
    pub brotli_bytes: u64,
    pub gzip_bytes: u64,
}

/// Writes `<file>.br` and `<file>.gz` (best quality, on every core) beside every compressible file under `dir`; a
/// copy newer than its file is kept, so a second run after an unchanged build does nothing.
pub fn precompress(dir: &Path) -> std::io::Result<Precompressed> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    let workers = std::thread::available_parallelism().map_or(1, usize::from).min(files.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::io::Result<Option<(u64, u64, u64)>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(file) = files.get(i) else { break done };
                        done.push(compress_one(file));
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    });
    let mut report = Precompressed::default();
    for result in results {
        match result? {
            Some((original, br, gz)) => {
                report.files += 1;
                report.original_bytes += original;
                report.brotli_bytes += br;
                report.gzip_bytes += gz;
            }
            None => report.skipped += 1,
        }
    }
    Ok(report)
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect(&entry.path(), files)?;
        } else if kind.is_file() {
            let path = entry.path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or_default();
            if COMPRESSIBLE.contains(&ext) {
                files.push(path);
            }
        }
    }
    Ok(())
}

/// Compresses one file; `None` when it is small or its copies are up to date.
fn compress_one(file: &Path) -> std::io::Result<Option<(u64, u64, u64)>> {
    let meta = std::fs::metadata(file)?;
    if meta.len() < MIN_COMPRESS_BYTES {
        return Ok(None);
    }
    let br_path = with_suffix(file, "br");
    let gz_path = with_suffix(file, "gz");
    let fresh = |copy: &Path| {
        std::fs::metadata(copy).and_then(|m| m.modified()).ok().zip(meta.modified().ok()).is_some_and(|(c, f)| c >= f)
    };
    if fresh(&br_path) && fresh(&gz_path) {
        return Ok(None);
    }
    let data = std::fs::read(file)?;
    let mut br = Vec::with_capacity(data.len() / 3);
    {
        let params = brotli::enc::BrotliEncoderParams { quality: 11, lgwin: 24, ..Default::default() };
        let mut writer = brotli::CompressorWriter::with_params(&mut br, 64 * 1024, &params);
        writer.write_all(&data)?;
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::with_capacity(data.len() / 3), flate2::Compression::best());
    gz.write_all(&data)?;
    let gz = gz.finish()?;
    write_atomically(&br_path, &br)?;
    write_atomically(&gz_path, &gz)?;
    Ok(Some((data.len() as u64, br.len() as u64, gz.len() as u64)))
}

fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// A server reading the directory meanwhile never sees half a file.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = with_suffix(path, "tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(tmp, path)
}

/// The site's files and which of them are named by their content's hash.
#[derive(Clone)]
pub struct Site {
    root: PathBuf,
    hashed: Arc<HashSet<String>>,
    /// Whether the build names files by their content (a hash list was found): then the lazily loaded modules
    /// carry a hash in their names too, one of their own that the list does not name.
    hashing: bool,
}

impl Site {
    /// `hash_file` is the list cargo-leptos writes beside the binary when it names files by their hash
    /// (`<name>: <hash>` per line); without one no file counts as hashed.
    pub fn new(root: impl Into<PathBuf>, hash_file: Option<&Path>) -> Self {
        let hashes = hash_file.and_then(|p| std::fs::read_to_string(p).ok()).unwrap_or_default();
        Self { root: root.into(), hashing: hash_file.is_some(), hashed: Arc::new(hashed_names(&hashes)) }
    }

    /// The file at the request's address, in the encoding it accepts when a compressed copy exists.
    async fn serve(&self, request: Request) -> Response {
        let files =
            ServeDir::new(&self.root).precompressed_br().precompressed_gzip().append_index_html_on_directories(false);
        // The file server answers every failure (an unreadable file included) with a status, never an error.
        let Ok(response) = files.oneshot(request).await;
        response.into_response()
    }

    /// For a client that accepts neither copy, a file's gzip copy decoded as it is sent: the container image keeps
    /// no uncompressed copy (saving 2.3 MB). No range: it would count bytes of a decoded file never on disk.
    async fn serve_decoded(&self, parts: &Parts) -> Response {
        let probe = probe(parts, [header::IF_MODIFIED_SINCE, header::IF_NONE_MATCH]);
        let probe = probe.header(header::ACCEPT_ENCODING, "gzip").body(Body::empty()).unwrap_or_default();
        let files = ServeDir::new(&self.root).precompressed_gzip().append_index_html_on_directories(false);
        let Ok(response) = tower_http::decompression::Decompression::new(files).oneshot(probe).await;
        let encoding = response.headers().get(header::CONTENT_ENCODING).cloned();
        if encoding.is_some() {
            // Only gzip was asked for, and only gzip is decoded: anything else would go out mislabelled.
            tracing::warn!(path = parts.uri.path(), ?encoding, "a static file's copy could not be decoded");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
        response.map(Body::new)
    }

    /// Whether a file name carries the hash of its content.
    fn is_hashed(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or_default();
        let parts: Vec<&str> = name.split('.').collect();
        // The stem and the extension are never the hash.
        let inner = parts.get(1..parts.len().saturating_sub(1)).unwrap_or_default();
        inner.iter().any(|part| self.hashed.contains(*part) || (self.hashing && looks_like_a_hash(part)))
    }
}

/// Whether an address names a file of a kind [`precompress`] gives compressed copies.
fn is_compressible(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or_default();
    name.rsplit_once('.').is_some_and(|(_, ext)| COMPRESSIBLE.contains(&ext))
}

/// cargo-leptos' content hashes: 22 characters of URL-safe base64 (128 bits).
fn looks_like_a_hash(part: &str) -> bool {
    part.len() == 22 && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The hashes of a hash list (`<kind>: <hash>` lines): a served name holding one as a dot-separated part
/// (`quire.<hash>.<ext>`, `<stem>.<hash>.<ext>`) counts as hashed.
fn hashed_names(hashes: &str) -> HashSet<String> {
    hashes.lines().filter_map(|line| line.split_once(':')).map(|(_, hash)| hash.trim().to_string()).collect()
}

/// The fallback of the router: a static file when one exists under the site's root (compressed as the
/// browser accepts, with its cache rule), otherwise the app's page for the address.
pub async fn file_or_page(State(state): State<AppState>, request: Request) -> Response {
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return page(state, request).await;
    }
    let (parts, body) = request.into_parts();
    // Only what a file's answer depends on goes to the file server.
    let names = [header::ACCEPT_ENCODING, header::IF_MODIFIED_SINCE, header::IF_NONE_MATCH, header::RANGE];
    let site = state.site.clone();
    let mut response = site.serve(probe(&parts, names).body(Body::empty()).unwrap_or_default()).await;
    if response.status() == StatusCode::NOT_FOUND && is_compressible(parts.uri.path()) {
        response = site.serve_decoded(&parts).await;
    }
    if response.status() != StatusCode::NOT_FOUND {
        let rule = if site.is_hashed(parts.uri.path()) { IMMUTABLE } else { REVALIDATE };
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(rule));
        // The answer depends on the encodings the browser accepts: a cache between must keep them apart.
        headers.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
        return response;
    }
    page(state, Request::from_parts(parts, body)).await
}

/// A request for the file server with the method, address and the headers `names` of the request `parts`.
fn probe<const N: usize>(parts: &Parts, names: [header::HeaderName; N]) -> axum::http::request::Builder {
    let mut probe = Request::builder().method(parts.method.clone()).uri(parts.uri.clone());
    for name in names {
        if let Some(value) = parts.headers.get(&name) {
            probe = probe.header(name, value);
        }
    }
    probe
}

/// The app's page for an address that is no file (its own "not found" page for an unknown one).
async fn page(state: AppState, request: Request) -> Response {
    let handler =
        leptos_axum::file_and_error_handler_with_context::<AppState, _>(super::headers::provide_nonce, app::shell);
    let uri = request.uri().clone();
    handler(uri, State(state), request).await
}

/// The cache rule of answers that set none, which leaves pages: they may show personal data, so no shared cache
/// keeps them and the browser asks again each time.
pub fn pages_private() -> tower_http::set_header::SetResponseHeaderLayer<HeaderValue> {
    tower_http::set_header::SetResponseHeaderLayer::if_not_present(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-cache"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_holding_a_listed_hash_count_as_hashed() {
        let hashed = Arc::new(hashed_names("js: abc123\nwasm: def456\ncss: 0f0f\n"));
        let site = Site { root: PathBuf::new(), hashed, hashing: true };
        assert!(site.is_hashed("/pkg/quire.abc123.js"));
        assert!(site.is_hashed("/pkg/quire.def456.wasm.br") && site.is_hashed("/pkg/quire.0f0f.css"));
        assert!(!site.is_hashed("/pkg/quire.js") && !site.is_hashed("/pkg/chunk_12.wasm"));
        assert!(!site.is_hashed("/pkg/quire.abc12.js"), "only whole parts count");
        // Lazily loaded modules carry hashes of their own.
        assert!(site.is_hashed("/pkg/chunk_12.lalMi42Zgj8fVArA-DUSkw.wasm"));
        assert!(site.is_hashed("/pkg/split___stats_route_view_1825.EMbDUbLYd5Ct2qvpDXEeSg.wasm.br"));
        assert!(!site.is_hashed("/pkg/lalMi42Zgj8fVArA-DUSkw.wasm"), "never the stem");
        let unhashed = Site { hashing: false, ..site };
        assert!(!unhashed.is_hashed("/pkg/chunk_12.lalMi42Zgj8fVArA-DUSkw.wasm"), "only when the build hashes");
    }

    #[test]
    fn precompressed_copies_decompress_to_the_file_and_a_second_run_does_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let text = "fn main() { println!(\"hello\"); }\n".repeat(200);
        std::fs::write(dir.path().join("app.js"), &text).expect("write");
        std::fs::write(dir.path().join("tiny.js"), "x").expect("write");
        std::fs::write(dir.path().join("photo.png"), vec![7u8; 4096]).expect("write");
        let report = precompress(dir.path()).expect("precompress");
        assert_eq!(report.files, 1, "{report:?}");
        assert!(report.brotli_bytes < report.original_bytes / 10, "{report:?}");

        let mut plain = Vec::new();
        let br = std::fs::read(dir.path().join("app.js.br")).expect("br");
        brotli::BrotliDecompress(&mut br.as_slice(), &mut plain).expect("brotli");
        assert_eq!(plain, text.as_bytes());
        let mut plain = String::new();
        let gz = std::fs::read(dir.path().join("app.js.gz")).expect("gz");
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(gz.as_slice()), &mut plain).expect("gzip");
        assert_eq!(plain, text);
        assert!(!dir.path().join("tiny.js.br").exists() && !dir.path().join("photo.png.br").exists());

        assert_eq!(precompress(dir.path()).expect("again").files, 0);
    }
}
