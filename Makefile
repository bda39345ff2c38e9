# The README's two commands.
.PHONY: demo demo-headless test
demo:            ## set up and open the quickstart notebook in JupyterLab
	scripts/demo.sh
demo-headless:   ## set up, run the quickstart offline, write out/quickstart.html
	scripts/demo.sh --headless
test:            ## set up and run every test suite
	scripts/test.sh
