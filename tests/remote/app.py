"""Real OpenAPI services for the contenox remote-tool tests (FastAPI + uvicorn, installed into
the project venv by tests/remote/install.sh, which scripts/setup.sh runs).

    python app.py quickstart PORT        # the FastAPI quickstart: one operation, summarize_text
    python app.py tickets PORT TOKEN     # path, query, header and body parameters, a $ref'd
                                         # pydantic model, a tenant parameter, an auth check

Listens on 127.0.0.1:PORT until killed. Every answer of `tickets` echoes what it received, so
a test can see where each argument arrived.
"""

import sys
from typing import Annotated, Optional

import uvicorn
from fastapi import FastAPI, Header, HTTPException, Query, Response
from pydantic import BaseModel


def quickstart() -> FastAPI:
    app = FastAPI(title="summarizer")

    @app.get("/summarize", operation_id="summarize_text")
    def summarize(text: str, max_words: int = 20):
        """Summarise a text: its first words."""
        return {"summary": " ".join(text.split()[:max_words])}

    @app.get("/health")
    def health():
        return {"ok": True}

    return app


class Person(BaseModel):
    name: str
    email: Optional[str] = None


class NewTicket(BaseModel):
    title: str
    priority: int = 3
    labels: list[str] = []
    assignee: Optional[Person] = None


def tickets(token: str) -> FastAPI:
    app = FastAPI(title="tickets")

    def check(authorization: Optional[str]) -> None:
        if authorization != f"Bearer {token}":
            raise HTTPException(status_code=401, detail="bad or missing token")

    @app.post(
        "/projects/{project_id}/tickets",
        operation_id="create_ticket",
        summary="Create a ticket",
        description="Creates a ticket in a project.",
    )
    def create_ticket(
        project_id: str,
        ticket: NewTicket,
        tenant_id: str,
        dry_run: bool = False,
        x_request_id: Annotated[Optional[str], Header()] = None,
        authorization: Annotated[Optional[str], Header()] = None,
    ):
        check(authorization)
        return {
            "project_id": project_id,
            "tenant_id": tenant_id,
            "dry_run": dry_run,
            "request_id": x_request_id,
            "ticket": ticket.model_dump(),
        }

    @app.get("/projects/{project_id}/tickets/{ticket_id}", operation_id="get_ticket")
    def get_ticket(
        project_id: str,
        ticket_id: int,
        tenant_id: str,
        fields: Annotated[Optional[list[str]], Query()] = None,
        authorization: Annotated[Optional[str], Header()] = None,
    ):
        check(authorization)
        return {
            "project_id": project_id,
            "ticket_id": ticket_id,
            "tenant_id": tenant_id,
            "fields": fields,
        }

    @app.delete(
        "/projects/{project_id}/tickets/{ticket_id}",
        operation_id="delete_ticket",
        status_code=204,
    )
    def delete_ticket(
        project_id: str,
        ticket_id: int,
        tenant_id: str,
        authorization: Annotated[Optional[str], Header()] = None,
    ):
        check(authorization)
        return Response(status_code=204)

    @app.get("/healthz")
    def healthz():
        return {"ok": True}

    return app


def main() -> None:
    kind, port = sys.argv[1], int(sys.argv[2])
    if kind == "quickstart":
        app = quickstart()
    elif kind == "tickets":
        app = tickets(sys.argv[3])
    else:
        sys.exit(f"unknown app {kind!r}")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
