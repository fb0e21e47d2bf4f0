"""CI tools: the grid across releases, issue texts, release discovery, bisect. They read the report
contract and never import the judge (an import-linter contract keeps it so)."""
