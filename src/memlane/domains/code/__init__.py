"""The code domain (D1): symbol definitions of working trees, found by name and intent, each
shown with its exact source and one hop of callers (symbol full text plus one hop of
caller enrichment).

How it works, in the order a refresh and a recall run:

- **Listing.** A git working tree is listed by ``git ls-files --cached --others
  --exclude-standard`` (ignored files stay out); any other folder by a walk. Vendored,
  generated and heavy folders (``SKIP_DIRS``) are pruned either way; files the privacy gate
  blocks are never opened (only counted).
- **Incremental sync.** Each file's (mtime, size) is compared with the index; only changed
  files are read, and a file whose content hash did not change is not parsed again. Files
  that left the listing leave the index. Oversized, binary, non-UTF-8 and generated files
  are recorded as skipped with their reason, so every report says what was left out.
- **Parsers.** Python through ``ast`` (modules, classes, functions, methods with qualified
  names, signatures, docstrings, decorators, line ranges); a Python file with a syntax error
  falls back to the regex path (reported as partial). Other languages through Universal
  Ctags when it is on PATH (JSON output), else through careful per-language regular
  expressions for definitions; ends of blocks are found by brace matching (indentation or
  ``end`` for Python and Ruby). Every hit says which parser found it.
- **Callers.** Call sites are stored per file as (callee's last name, line, enclosing
  symbol): ``ast.Call`` for Python (``obj.save()`` counts as a call of ``save``), an
  identifier followed by ``(`` elsewhere. A recalled symbol lists up to ``max_callers`` of
  them — one hop, by name, so overloaded names over-report (documented, not hidden).
- **Search.** FTS5 (porter) over the symbol name split into words (``resumeUpload`` →
  resume upload), the qualified name, signature, doc line and path; BM25 weights the name
  highest. Activation = 0.6 · IDF-weighted coverage of the query terms (each term credited by
  the best field it is found in: name 1.0 … path 0.3) + 0.25 · BM25 relative to the best
  candidate + 0.15 · the share of the query that names the symbol exactly (``Uploader``,
  ``datetime.fromisoformat``: an identifier query wants that symbol, not its stems' cousins).
  Coverage is absolute, so a query whose words the code does not contain stays below
  ``MIN_COVERAGE`` and recalls nothing (R3). Coverage is computed for the BM25 top
  ``CANDIDATES`` only (``highlight()`` per term is the cost of a recall).
"""

from .ctags import find_ctags, parse_ctags, run_ctags
from .domain import CodeDomain, filter_sql
from .listing import list_files
from .python import parse_python
from .regex import find_calls, parse_regex
from .words import code_query_terms, searchable_words, split_identifier

__all__ = ["CodeDomain", "code_query_terms", "filter_sql", "find_calls", "find_ctags", "list_files", "parse_ctags",
           "parse_python", "parse_regex", "run_ctags", "searchable_words", "split_identifier"]
