//! Quire's own files are its user's alone, whatever the umask: the data directory `0700`, the SQLite database
//! (with its `-wal` and `-shm` files) and the session key `0600`, also files left by an older version.

use std::{io, path::Path};

/// Makes the data directory and the SQLite database at `sqlite_path` private; the database is created empty
/// (`0600`) when missing, so SQLite's own files, which take its mode, are private from the first write.
pub fn secure(data_dir: &Path, sqlite_path: Option<&Path>) -> io::Result<()> {
    std::fs::create_dir_all(data_dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))?;
        let secret = data_dir.join(crate::auth::secret::SECRET_FILE);
        let mut files = vec![secret];
        if let Some(db) = sqlite_path {
            std::fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o600).open(db)?;
            for suffix in ["", "-wal", "-shm"] {
                let mut name = db.as_os_str().to_owned();
                name.push(suffix);
                files.push(name.into());
            }
        }
        for file in files.iter().filter(|f| f.exists()) {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    Ok(())
}

/// The file of a `sqlite://` URL (`None` for another scheme or an in-memory database).
pub fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && path != ":memory:").then(|| path.into())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn the_data_directory_and_database_are_private() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("data");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let db = dir.join("quire.db");
        let wal = dir.join("quire.db-wal");
        std::fs::write(&wal, b"").unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o644)).unwrap();
        secure(&dir, Some(&db)).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&wal), 0o600, "a file left by an older version is made private");
    }

    #[test]
    fn sqlite_urls_name_their_file() {
        assert_eq!(sqlite_file("sqlite:///var/lib/quire/quire.db?mode=rwc"), Some("/var/lib/quire/quire.db".into()));
        assert_eq!(sqlite_file("sqlite://data/quire.db"), Some("data/quire.db".into()));
        assert_eq!(sqlite_file("postgres://u@h/db"), None);
        assert_eq!(sqlite_file("sqlite::memory:"), None);
    }
}
