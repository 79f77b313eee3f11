# Sourced by the benchmark scripts: the clone source template, from MIRRORS when it is set (a
# folder with a local clone per repository, OWNER+NAME/repo or OWNER+NAME), else GitHub.
if [[ -n "${MIRRORS:-}" ]]; then
  source_template="$MIRRORS/{owner}+{name}/repo"
  [[ -d "$MIRRORS/psf+requests/repo" ]] || source_template="$MIRRORS/{owner}+{name}"
else
  source_template="https://github.com/{repo}.git"
fi
export source_template
