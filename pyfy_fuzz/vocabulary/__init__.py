"""The op vocabulary derived from the installed torch (`derive`), and its census rendered as
docs/VOCABULARY.md (`doc`). Imports torch; the generators read the table it writes, never this
package (Note [Op classes] in pyfy_fuzz/schema/vocabulary.py)."""

from pyfy_fuzz.vocabulary.doc import render_doc

__all__ = ["render_doc"]
