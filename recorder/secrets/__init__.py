"""Secrets become `{{PLACEHOLDER}}`s before anything reaches the disk: `redact` (the
redactor: known headers and members, values learned while recording) and `places` (where else
a secret hides: a member named twice, a push URL's path segment, multipart parts). Pure."""
