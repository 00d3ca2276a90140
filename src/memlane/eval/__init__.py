"""E: the evaluation harness: benchmark formats, metrics, runs and reports.

``evaluate_path(path, ...)`` loads any supported benchmark folder and returns plain data;
``format_report(result)`` renders it as text. Nothing here prints.
"""

from .datasets import Dataset, DatasetError, Query, detect_format, load_dataset
from .report import format_report, to_json
from .runner import MODES, evaluate_path, run_eval

__all__ = [
    "Dataset", "DatasetError", "MODES", "Query", "detect_format", "evaluate_path", "format_report",
    "load_dataset", "run_eval", "to_json",
]
