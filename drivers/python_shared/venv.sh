# Sourced by the build.sh of drivers that run in a venv of a given CPython (OpenFHE: 3.10,
# TenSEAL and Concrete: 3.11), in the fhemark cache outside the clone.
#   find_python X.Y VAR   prints a CPython X.Y: $VAR if set and right, else pythonX.Y on PATH,
#                         else the newest pyenv X.Y.*; prints nothing when none exists
#   has_pins VENV PIN...  the venv has every pinned name==version (a bare name: any version)
#   fresh_venv VENV PY    makes VENV with PY (replacing one of another version); fails when
#                         PY cannot make venvs (no pythonX.Y-venv)

is_python() {  # is_python PATH X.Y
    [ -n "${1:-}" ] && [ -x "$1" ] && "$1" -c "import sys; sys.exit(0 if '%d.%d' % sys.version_info[:2] == '$2' else 1)" 2>/dev/null
}

find_python() {
    local want="$1" var="$2" cand root
    cand="${!var:-}"
    if [ -n "$cand" ] && is_python "$cand" "$want"; then echo "$cand"; return; fi
    cand="$(command -v "python$want" 2>/dev/null || true)"
    if [ -n "$cand" ] && is_python "$cand" "$want"; then echo "$cand"; return; fi
    root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
    for cand in $(ls -d "$root"/versions/"$want".*/bin/python"$want" "$HOME"/.pyenv/versions/"$want".*/bin/python"$want" \
                  2>/dev/null | sort -V -r); do
        if is_python "$cand" "$want"; then echo "$cand"; return; fi
    done
}

fresh_venv() {
    local venv="$1" py="$2" want
    want="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    if [ -x "$venv/bin/python" ] && ! is_python "$venv/bin/python" "$want"; then
        rm -rf "$venv"
    fi
    [ -x "$venv/bin/python" ] || "$py" -m venv "$venv" >&2 || { rm -rf "$venv"; return 1; }
}

has_pins() {  # has_pins VENV name==version|name ...: the venv exists and has every one installed
    [ -x "$1/bin/python" ] || return 1
    local venv="$1"; shift
    "$venv/bin/python" - "$@" <<'PYEOF' 2>/dev/null
import sys
from importlib import metadata
for pin in sys.argv[1:]:
    name, _, version = pin.partition("==")
    if metadata.version(name) != (version or metadata.version(name)):
        sys.exit(1)
PYEOF
}
