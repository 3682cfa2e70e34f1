"""The report's sections, one module per paper or bench study: each function takes a results folder and
returns Markdown lines (empty when its result files are absent), saving its figures beside them."""
