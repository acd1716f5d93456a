#!/usr/bin/env bash
# The ruff-format hook of .pre-commit-config.yaml: keeps formatted files formatted without
# reformatting the rest. The code base predates ruff format and most of it is hand-wrapped, so a
# touched file is formatted only when it is new or was already `ruff format` clean at HEAD;
# pre-commit fails the commit when that changed a file, to be looked at and staged again. A file
# that was not clean is left as written: reformatting one belongs in a commit of its own
# (`.venv/bin/ruff format <file>`), never mixed into a change of behaviour.
set -euo pipefail
RUFF=${RUFF:-.venv/bin/ruff}
clean=()
for f in "$@"; do
    if git cat-file -e "HEAD:$f" 2>/dev/null \
        && ! git show "HEAD:$f" | "$RUFF" format --check --force-exclude --stdin-filename "$f" - >/dev/null 2>&1; then
        continue
    fi
    clean+=("$f")
done
if [ ${#clean[@]} -gt 0 ]; then
    exec "$RUFF" format --force-exclude "${clean[@]}"
fi
