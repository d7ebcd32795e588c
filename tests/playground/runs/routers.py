"""A database router for tests: every query goes to one alias, chosen per test."""


class PinnedRouter:
    alias = "default"

    def db_for_read(self, model, **hints):
        return PinnedRouter.alias

    def db_for_write(self, model, **hints):
        return PinnedRouter.alias
