"""The report contract: one builder per record type, the schema, validation, and collision-free writing.

The JSON report is what the grid job hands to the issues job (which runs a wheel
built separately), so its shape has one owner: the builders in ``records`` produce
every record, ``report.schema.json`` (at the package root) describes them, and every
reader validates against it (``reading``). Imports nothing of the engine: the CI layer
reads reports through this package alone.
"""

from pytest_tokcompat.contract.identity import judge_identity, probe_set_identity
from pytest_tokcompat.contract.reading import read_report, schema_problems, validate_report
from pytest_tokcompat.contract.records import (
    ALIAS,
    CASE,
    OVERRIDE_KINDS,
    TRACKED_AS,
    alias_record,
    case_record,
    is_full_run,
    library_versions,
    not_checked_record,
    registry_record,
    report_document,
    utc_timestamp,
)
from pytest_tokcompat.contract.schema import (
    REGENERATE,
    REPORT_SCHEMA_NAME,
    SCHEMA_VERSION,
    load_report_schema,
    report_schema_path,
)
from pytest_tokcompat.contract.writing import (
    LOCK_NAME,
    OUTPUT_GITIGNORE,
    make_output_folder,
    parse_timestamp,
    superseded,
    write_json_atomic,
    write_report,
)

__all__ = [
    "ALIAS",
    "CASE",
    "LOCK_NAME",
    "OUTPUT_GITIGNORE",
    "OVERRIDE_KINDS",
    "REGENERATE",
    "REPORT_SCHEMA_NAME",
    "SCHEMA_VERSION",
    "TRACKED_AS",
    "alias_record",
    "case_record",
    "is_full_run",
    "judge_identity",
    "library_versions",
    "load_report_schema",
    "make_output_folder",
    "not_checked_record",
    "parse_timestamp",
    "probe_set_identity",
    "read_report",
    "registry_record",
    "report_document",
    "report_schema_path",
    "schema_problems",
    "superseded",
    "utc_timestamp",
    "validate_report",
    "write_json_atomic",
    "write_report",
]
