# The README's two commands, and the fast test lane.
.PHONY: demo demo-headless test test-fast docs
demo:            ## set up and open the quickstart notebook in JupyterLab
	scripts/demo.sh
demo-headless:   ## set up, run the quickstart offline, write out/quickstart.html
	scripts/demo.sh --headless
test:            ## set up and run every test suite
	scripts/test.sh
test-fast:       ## the lane to run while you iterate: no browser, notebook or slow tests
	scripts/test.sh --fast
docs:            ## build the documentation site offline into site/
	scripts/docs.sh
