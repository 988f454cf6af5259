"""Evidence bundles: a run's whole record in one file that anyone can check without longrun's
database (issue 29).

- `bundle`: the format (zip layout, manifest, signature) and safe reading;
- `export`: writing a bundle from PostgreSQL (`longrun export`);
- `verify`, `runs`, `source`, `report`: checking one from the file alone (`longrun verify-bundle`).

Nothing is imported here: `longrun.evidence.verify` must load without a database driver, and
`export` needs one. docs/EVIDENCE.md describes the format for verifiers written without longrun.
"""
