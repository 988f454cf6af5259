"""`longrun demo`: the whole of longrun on a sample project, in under two minutes.

| module | job |
|---|---|
| `walkthrough` | the demo itself: stack, worker, a review that stops at an approval, the reports |
| `console` | `longrun demo --console`: the approval answered by a person in the web console |

Its arguments are declared in `longrun.cli.parsers.demo`; nothing is imported here, so parsing a
command line never loads the demo.
"""
