package reports

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// ReportSchemaJSON is the JSON Schema (draft 2020-12) of the JSON report,
// the same bytes as reports/schema/report.v1.json.
//
//go:embed schema/report.v1.json
var ReportSchemaJSON []byte

// CompareSchemaJSON is the JSON Schema of compare's JSON output
// (reports/schema/compare.v1.json).
//
//go:embed schema/compare.v1.json
var CompareSchemaJSON []byte

var (
	schemaOnce                 sync.Once
	reportSchema, cmpSchema    *jsonschema.Resolved
	reportSchemaErr, cmpSchErr error
)

func resolveSchema(data []byte) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	return s.Resolve(nil)
}

func loadSchemas() {
	reportSchema, reportSchemaErr = resolveSchema(ReportSchemaJSON)
	cmpSchema, cmpSchErr = resolveSchema(CompareSchemaJSON)
}

// ValidateReportJSON checks a JSON report against ReportSchemaJSON.
func ValidateReportJSON(data []byte) error {
	schemaOnce.Do(loadSchemas)
	if reportSchemaErr != nil {
		return fmt.Errorf("report schema: %w", reportSchemaErr)
	}
	return validateAgainst(reportSchema, data)
}

// ValidateCompareJSON checks compare's JSON output against CompareSchemaJSON.
func ValidateCompareJSON(data []byte) error {
	schemaOnce.Do(loadSchemas)
	if cmpSchErr != nil {
		return fmt.Errorf("compare schema: %w", cmpSchErr)
	}
	return validateAgainst(cmpSchema, data)
}

func validateAgainst(rs *jsonschema.Resolved, data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return rs.Validate(v)
}
