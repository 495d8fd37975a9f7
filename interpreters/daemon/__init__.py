"""The task daemon (SPEC §9) and its clients: the server, the evaluator's remote interpreter,
and `test-patch`.

Interpreter layer. `service` holds the daemon's behaviour apart from HTTP, `app` the FastAPI
routes, `server` the listeners and signals, `backend` the real system side, `startup` the
order in which the daemon starts, `client` the httpx client, `remote` the interpreters that
answer effects over the API, `commands` the click commands and `console` how they speak.
"""
