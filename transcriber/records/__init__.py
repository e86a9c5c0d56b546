"""An owner's records as the owner reads and edits them: cards, pages of the archive,
transcripts and corrections, the journal of one record, its audio, uploads and the
page's sign-in sessions.

Every query of this package that reads or writes a record names the owner ($1), so a
route can only ever reach the caller's own records (tests/integration/
test_api_hardening.py checks each one). The operator's reads of any record are in
transcriber.pipeline.operator.
"""
