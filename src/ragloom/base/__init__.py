"""Base types shared by query engines and synthesizers (``ragloom.base.response.schema``: ``Response``…)."""
