"""Memory inside agent frameworks: each module imports its framework only when imported."""
