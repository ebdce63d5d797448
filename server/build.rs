//! The migrations are embedded by `sqlx::migrate!`: a change to them alone must rebuild the server.
fn main() {
    println!("cargo:rerun-if-changed=../migrations");
}
