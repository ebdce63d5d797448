//! Text out of uploaded files. PDF is parsed in a child process (`quire extract pdf`, fed on stdin) with limits on
//! its memory, CPU and wall-clock time and text: a hostile file can only end that child, never the server.

use std::{
    io::{Read, Write},
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The most text one file yields; the rest of a longer file is left out (about 1,700 chunks).
pub const MAX_TEXT_BYTES: usize = 2 * 1024 * 1024;
/// Address space of the extraction child (the binary's own mappings included).
pub const CHILD_ADDRESS_SPACE_BYTES: u64 = 1024 * 1024 * 1024;
/// CPU time of the extraction child.
pub const CHILD_CPU_SECONDS: u64 = 10;
/// Wall-clock time the server waits for the child before killing it.
pub const CHILD_WALL_SECONDS: u64 = 20;
/// Largest input the child accepts on stdin (the upload limit, with room to spare).
const CHILD_MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// The kinds of file Quire reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Text,
    Markdown,
    Pdf,
}

impl FileKind {
    /// The kind from the declared content type and the file name; `None` for anything else.
    pub fn detect(content_type: Option<&str>, filename: &str, bytes: &[u8]) -> Option<FileKind> {
        let lower = filename.to_lowercase();
        let extension = lower.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        let mime = content_type.unwrap_or("").split(';').next().unwrap_or("").trim().to_lowercase();
        if bytes.starts_with(b"%PDF-") && (mime == "application/pdf" || extension == "pdf") {
            return Some(FileKind::Pdf);
        }
        if mime == "application/pdf" || extension == "pdf" {
            // Says PDF, is not one: refused rather than indexed as garbage.
            return None;
        }
        // Text that is not UTF-8 is recognised here and refused by extraction, with a message that says why.
        match (mime.as_str(), extension) {
            (_, "md" | "markdown") | ("text/markdown" | "text/x-markdown", _) => Some(FileKind::Markdown),
            (_, "txt" | "text") | ("text/plain", _) => Some(FileKind::Text),
            // Browsers send unknown files as application/octet-stream; accept them by extension only.
            _ => None,
        }
    }

    /// The content type stored and shown for the file.
    pub fn content_type(self) -> &'static str {
        match self {
            FileKind::Text => "text/plain",
            FileKind::Markdown => "text/markdown",
            FileKind::Pdf => "application/pdf",
        }
    }
}

/// Why a file's text could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the file is not valid UTF-8 text")]
    NotUtf8,
    /// The parser failed, crashed, ran out of its limits or time.
    #[error("the file could not be read")]
    Unreadable,
    /// The child could not be started at all (a fault of the server, not of the file).
    #[error("the text extractor could not be started: {0}")]
    Spawn(#[source] std::io::Error),
}

/// Where the extraction child comes from: Quire's own binary.
#[derive(Debug, Clone)]
pub struct Extractor {
    program: PathBuf,
}

impl Extractor {
    /// Runs `program extract ...` for each PDF (`program` must be a Quire binary).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self { program: program.into() }
    }

    /// The binary this process runs from. On Linux `/proc/self/exe` still starts the same binary after the
    /// file on disk was replaced by an upgrade.
    pub fn current() -> std::io::Result<Self> {
        let proc_exe = Path::new("/proc/self/exe");
        if proc_exe.exists() {
            return Ok(Self::new(proc_exe));
        }
        std::env::current_exe().map(Self::new)
    }

    /// The text of a file, at most [`MAX_TEXT_BYTES`], without NUL characters (PostgreSQL's text cannot hold
    /// them); text is checked on a blocking thread, PDF goes to a child process.
    pub async fn extract(&self, kind: FileKind, bytes: Vec<u8>) -> Result<String, ExtractError> {
        match kind {
            FileKind::Text | FileKind::Markdown => {
                tokio::task::spawn_blocking(move || plain_text(bytes)).await.map_err(|_| ExtractError::Unreadable)?
            }
            FileKind::Pdf => self.pdf_in_child(bytes).await,
        }
    }

    async fn pdf_in_child(&self, bytes: Vec<u8>) -> Result<String, ExtractError> {
        let mut child = tokio::process::Command::new(&self.program)
            .args(["extract", "pdf"])
            // Nothing of the server's environment (keys, database URL) reaches the parser.
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(ExtractError::Spawn)?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ExtractError::Unreadable);
        };
        let feed = async move {
            // A child that dies early closes the pipe: its exit status tells what happened.
            let _ = stdin.write_all(&bytes).await;
            drop(stdin);
        };
        let read = async move {
            let mut out = Vec::new();
            stdout.take(MAX_TEXT_BYTES as u64 + 1).read_to_end(&mut out).await.map(|_| out)
        };
        let run = async { tokio::join!(feed, read, child.wait()) };
        let (_, out, status) = match tokio::time::timeout(Duration::from_secs(CHILD_WALL_SECONDS), run).await {
            Ok(done) => done,
            Err(_) => {
                tracing::info!("pdf text extraction timed out");
                // Dropping the child kills it (`kill_on_drop`); tokio reaps it.
                return Err(ExtractError::Unreadable);
            }
        };
        let status = status.map_err(|_| ExtractError::Unreadable)?;
        if !status.success() {
            tracing::info!(%status, "pdf text extraction failed");
            return Err(ExtractError::Unreadable);
        }
        let out = out.map_err(|_| ExtractError::Unreadable)?;
        Ok(without_nul(truncate_utf8_lossy(&out, MAX_TEXT_BYTES)))
    }
}

/// UTF-8 text without a leading byte-order mark and without NUL characters.
fn plain_text(bytes: Vec<u8>) -> Result<String, ExtractError> {
    let mut text = String::from_utf8(bytes).map_err(|_| ExtractError::NotUtf8)?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(without_nul(text))
}

/// The text with its NUL characters dropped.
fn without_nul(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', "")
    } else {
        text
    }
}

/// At most `max` bytes of `bytes` as text, cut at a character boundary; invalid sequences become U+FFFD.
fn truncate_utf8_lossy(bytes: &[u8], max: usize) -> String {
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(max)]).into_owned();
    if bytes.len() > max {
        // A character cut in half at the end became U+FFFD: drop it.
        while text.ends_with('\u{fffd}') {
            text.pop();
        }
    }
    text
}

/// The text of a PDF, at most `max_bytes` of it (parsing stops once that much is written). This is what the
/// extraction child runs; the fuzz target calls it directly.
pub fn pdf_text(bytes: &[u8], max_bytes: usize) -> Result<String, String> {
    let mut sink = CappedSink { out: Vec::new(), max: max_bytes, full: false };
    let result = {
        let mut doc = pdf_extract::Document::load_mem(bytes).map_err(|e| e.to_string())?;
        if doc.is_encrypted() {
            // Only files that open with the empty password (permissions-only encryption) are read.
            doc.decrypt("").map_err(|e| e.to_string())?;
        }
        let mut output = pdf_extract::PlainTextOutput::new(&mut sink as &mut dyn Write);
        pdf_extract::output_doc(&doc, &mut output)
    };
    match result {
        Ok(()) => {}
        // The sink refused more text: what it holds is the answer.
        Err(_) if sink.full => {}
        Err(e) => return Err(e.to_string()),
    }
    Ok(truncate_utf8_lossy(&sink.out, max_bytes))
}

/// Collects output until `max` bytes, then refuses more, which ends the parser's walk early.
struct CappedSink {
    out: Vec<u8>,
    max: usize,
    full: bool,
}

impl Write for CappedSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.max.saturating_sub(self.out.len());
        if room == 0 {
            self.full = true;
            return Err(std::io::Error::other("text limit reached"));
        }
        let take = room.min(buf.len());
        self.out.extend_from_slice(&buf[..take]);
        Ok(take)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Sets a resource limit of this process (soft and hard).
fn limit(resource: rustix::process::Resource, value: u64) -> std::io::Result<()> {
    let limit = rustix::process::Rlimit { current: Some(value), maximum: Some(value) };
    rustix::process::setrlimit(resource, limit).map_err(std::io::Error::from)
}

/// The body of `quire extract pdf`: limits itself, reads a PDF from stdin, writes its text to stdout; exits
/// non-zero (or is ended by a crash or limit) when the file cannot be read.
pub fn child_main() -> std::process::ExitCode {
    use rustix::process::Resource;
    let limits = [
        (Resource::As, CHILD_ADDRESS_SPACE_BYTES),
        (Resource::Cpu, CHILD_CPU_SECONDS),
        // A crash leaves no core file behind.
        (Resource::Core, 0),
        (Resource::Fsize, 0),
        (Resource::Nproc, 0),
    ];
    for (resource, value) in limits {
        // Lowering a limit cannot fail in practice; if it does, the child refuses to parse unconfined.
        if let Err(e) = limit(resource, value) {
            eprintln!("could not set a resource limit: {e}");
            return std::process::ExitCode::from(3);
        }
    }
    let mut input = Vec::new();
    if std::io::stdin().take(CHILD_MAX_INPUT_BYTES + 1).read_to_end(&mut input).is_err()
        || input.len() as u64 > CHILD_MAX_INPUT_BYTES
    {
        return std::process::ExitCode::from(2);
    }
    match pdf_text(&input, MAX_TEXT_BYTES) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            if stdout.write_all(text.as_bytes()).and_then(|_| stdout.flush()).is_err() {
                return std::process::ExitCode::from(2);
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_kinds_by_type_name_and_content() {
        assert_eq!(FileKind::detect(Some("text/plain"), "a.txt", b"hi"), Some(FileKind::Text));
        assert_eq!(FileKind::detect(Some("application/octet-stream"), "a.md", b"# hi"), Some(FileKind::Markdown));
        assert_eq!(FileKind::detect(Some("application/pdf"), "x.pdf", b"%PDF-1.7"), Some(FileKind::Pdf));
        assert_eq!(FileKind::detect(Some("application/pdf"), "x.pdf", b"not a pdf"), None);
        assert_eq!(FileKind::detect(Some("image/png"), "x.png", b"\x89PNG"), None);
        // Named text, read as text: extraction refuses it with a clear reason.
        assert_eq!(FileKind::detect(Some("text/plain"), "bad.txt", &[0xff, 0xfe, 0x00]), Some(FileKind::Text));
    }

    #[test]
    fn plain_text_loses_its_byte_order_mark_only() {
        assert_eq!(plain_text("\u{feff}héllo\u{feff}".as_bytes().to_vec()).unwrap(), "héllo\u{feff}");
        assert!(matches!(plain_text(vec![0xff, 0xfe]), Err(ExtractError::NotUtf8)));
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        let text = "aé€😀".repeat(10);
        for max in 0..text.len() + 2 {
            let cut = truncate_utf8_lossy(text.as_bytes(), max);
            assert!(cut.len() <= max, "{max}");
            assert!(text.starts_with(&cut), "{max}: {cut}");
            assert!(!cut.contains('\u{fffd}'));
        }
    }

    #[test]
    fn the_sink_stops_the_parser_at_its_cap() {
        let mut sink = CappedSink { out: Vec::new(), max: 5, full: false };
        assert_eq!(sink.write(b"abc").unwrap(), 3);
        assert_eq!(sink.write(b"defg").unwrap(), 2);
        assert!(sink.write(b"h").is_err());
        assert!(sink.full);
        assert_eq!(sink.out, b"abcde");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(pdf_text(b"%PDF-1.7\n garbage", 1000).is_err());
        assert!(pdf_text(b"", 1000).is_err());
    }
}
