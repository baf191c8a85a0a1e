/**
 * A recorded suite as the YAML file a person would have written: the schema comment first (editors complete it), short
 * lists of plain values on one line (`buttons: [Join, Skip]`), long texts not folded.
 */
import YAML from 'yaml';

const SCHEMA_LINE = '# yaml-language-server: $schema=https://appreg.dev/schemas/test-suite.schema.json';
const FLOW_MAX = 6;

export function suiteYaml(
  suite: Record<string, unknown>,
  comment = 'Recorded with appreg (docs/testing.md, "Recording a test").',
): string {
  const doc = new YAML.Document(suite);
  YAML.visit(doc, {
    Seq(_key, node) {
      if (node.items.length <= FLOW_MAX && node.items.every((i) => YAML.isScalar(i))) node.flow = true;
    },
    Map(key, node) {
      // a user's declaration on one line, as the hand-written suites have it: dev: { name: Dev }
      if (
        key === 'value' &&
        node.items.length === 1 &&
        node.items.every((p) => YAML.isScalar(p.value)) &&
        node.items[0]?.key?.toString() === 'name'
      )
        node.flow = true;
    },
  });
  doc.commentBefore = ` ${comment}`;
  return `${SCHEMA_LINE}\n${doc.toString({ lineWidth: 0 })}`;
}
