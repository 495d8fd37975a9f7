"""The core's implementation: the modules behind the faces, shared with ssegrade's own interpreters.

Nothing here is promised to other programs: embed the faces instead (`ssegrade` for the
verdict, the documents, the run loop and the grading program; `ssegrade.effects` for the effect
vocabulary an interpreter answers; the feature packages `ssegrade.report`, `batch`, `protocol`,
`trace`, `guard`, `preview`, `testing`). `docs/architecture.md` lists the supported names.
Importing this package loads none of its modules.
"""
