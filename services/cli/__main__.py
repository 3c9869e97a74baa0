from services.cli.main import app

app(prog_name="ballast")
