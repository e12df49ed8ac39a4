"""What the test modules share: toy corpora, tiny models and tokenizers, case tables that the
engine and the published bundle must decide alike, and the platform's run and worker helpers.

Imported as `from tests.helpers.toy import …` (the repository root is on pytest's
`pythonpath`). A test module never imports another test module
(tests/test_architecture.py checks it): what two of them share lives here, and fixtures that
many share live in a conftest.py."""
