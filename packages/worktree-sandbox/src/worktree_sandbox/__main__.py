"""`python -m worktree_sandbox` runs the command line."""

from worktree_sandbox.cli import main

main()
