# Shared by scripts/run and scripts/test: installs what building Quire needs, skipping what is there.
# Versions are pinned to ones that work together with rustc 1.95 (see docs/operating.md).

CARGO_LEPTOS_VERSION=0.3.10
WASM_BINDGEN_VERSION=0.2.130

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$ROOT/end2end/node_modules/.bin:$HOME/.cargo/bin:$PATH"

# Each step says how long since the script began, so a slow step shows in any log, and is remembered for
# step_times.
STEP_NAMES=()
STEP_STARTS=()
step() {
  STEP_NAMES+=("$*")
  STEP_STARTS+=("$SECONDS")
  printf '\n==> %s  [%dm%02ds]\n' "$*" $((SECONDS / 60)) $((SECONDS % 60))
}

# The time of every step so far, slowest first, and the total (scripts/test prints it when it ends, passed or not).
step_times() {
  local count=${#STEP_NAMES[@]} i end
  [ "$count" -gt 0 ] || return 0
  printf '\n==> time per step, slowest first (total %dm%02ds)\n' $((SECONDS / 60)) $((SECONDS % 60))
  for ((i = 0; i < count; i++)); do
    if [ $((i + 1)) -lt "$count" ]; then end=${STEP_STARTS[i + 1]}; else end=$SECONDS; fi
    printf '%d\t%s\n' $((end - STEP_STARTS[i])) "${STEP_NAMES[i]}"
  done | sort -rn | while IFS=$'\t' read -r took name; do
    printf '  %3dm%02ds  %s\n' $((took / 60)) $((took % 60)) "$name"
  done
}

ensure_wasm_target() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    step "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
}

ensure_cargo_leptos() {
  if ! cargo leptos --version 2>/dev/null | grep -q "$CARGO_LEPTOS_VERSION"; then
    # A debug build of the tool installs in half the time and works the same.
    step "installing cargo-leptos $CARGO_LEPTOS_VERSION (about 10 minutes, once)"
    cargo install --locked --debug cargo-leptos --version "$CARGO_LEPTOS_VERSION"
  fi
}

ensure_wasm_bindgen() {
  if ! wasm-bindgen --version 2>/dev/null | grep -q "$WASM_BINDGEN_VERSION"; then
    # Not --locked: its lockfile pins a crate version the registry no longer serves.
    step "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (about 4 minutes, once)"
    cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
  fi
}

# npm packages: wasm-opt (binaryen) for release builds, Playwright for the browser tests. Browsers are never
# downloaded: the tests use Debian's Chromium.
ensure_node_packages() {
  local stamp="$ROOT/end2end/node_modules/.quire-lock"
  if [ ! -f "$stamp" ] || ! cmp -s "$ROOT/end2end/package-lock.json" "$stamp"; then
    step "installing npm packages (wasm-opt, Playwright)"
    (cd "$ROOT/end2end" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
    cp "$ROOT/end2end/package-lock.json" "$stamp"
  fi
}

apt_install() {
  step "installing Debian packages: $*"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  # Another installer may hold the package lock for a while (a fresh machine updating itself): wait for it.
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@"
}

ensure_build_tools() {
  ensure_wasm_target
  ensure_cargo_leptos
  ensure_wasm_bindgen
  ensure_node_packages
}
