//! Statistics and reports of bench: histograms, guidellm and vLLM console tables, JSON/YAML/CSV/HTML files
