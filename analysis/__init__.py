"""From result files to reports: comparisons with the papers' published numbers, and figures."""
