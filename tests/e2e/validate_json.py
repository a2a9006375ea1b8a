"""Validate a dlscope JSON document (standard input) against docs/schema/NAME.schema.json with
Debian's python3-jsonschema: run as /usr/bin/python3 validate_json.py NAME. Exit 1 with the
first error's path and message."""
import glob
import json
import os
import sys

import jsonschema

SCHEMAS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "schema")


def main():
    store = {}
    for path in glob.glob(os.path.join(SCHEMAS, "*.schema.json")):
        schema = json.load(open(path))
        jsonschema.Draft202012Validator.check_schema(schema)
        store[schema["$id"]] = schema
    schema = json.load(open(os.path.join(SCHEMAS, sys.argv[1] + ".schema.json")))
    resolver = jsonschema.RefResolver.from_schema(schema, store=store)
    validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
    doc = json.load(sys.stdin)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        print(f"{sys.argv[1]}: at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
