# Two commands do all set-up on a fresh machine with Python 3.11+:
#   make demo   - the product on its embedded default, served on 127.0.0.1:$(PORT)
#   make test   - the whole test suite (integration tests run when the service variables are set)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
STAMP  := $(VENV)/.installed-stamp
export PORT

.PHONY: install demo serve test test-browser lint typecheck format schema clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed; set PYTHON=python3.11 (found " + sys.version.split()[0] + ")")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py load_demo
	$(BIN)/python manage.py runserver --noreload 127.0.0.1:$(PORT)

serve: $(STAMP)
	$(BIN)/python manage.py runserver --noreload 127.0.0.1:$(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest

# Only the browser tests (tests/browser/): Debian's Chromium driven by Playwright.
test-browser: $(STAMP)
	$(BIN)/python -m pytest -m browser tests/browser

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

schema: $(STAMP)
	$(BIN)/python manage.py spectacular --file docs/openapi.yaml --validate

clean:
	rm -rf $(VENV) var
