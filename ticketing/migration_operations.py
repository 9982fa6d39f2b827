"""A migration operation that relabels one model: its options and its fields' labels at once.

A run of `AlterField`s re-renders the migration state once per field, and a relational field's
re-render cascades through every related model (the user model reaches most of them): for the
seven verbose-name migrations that was a third of a fresh `migrate`'s CPU time. Labels (verbose
names, help texts) live in Python only, so this operation writes nothing to the database and
re-renders the model once.
"""

from django.db import models
from django.db.migrations.operations import AlterModelOptions
from django.db.migrations.operations.base import Operation, OperationCategory

# What a label change may touch: attributes no schema editor turns into SQL.
LABEL_ATTRIBUTES = frozenset({"verbose_name", "verbose_name_plural", "help_text", "choices"})


def _schema_of(field: models.Field) -> tuple:
    _, path, args, kwargs = field.deconstruct()
    return path, args, {key: value for key, value in kwargs.items() if key not in LABEL_ATTRIBUTES}


class RelabelModel(Operation):
    """`AlterModelOptions` (`options`, when given) plus an `AlterField` per entry of `fields`, for
    changes to labels only: the resulting state is theirs, the database is left as it is."""

    reversible = True
    reduces_to_sql = True  # as SQL it is empty, like an AlterField of a label
    category = OperationCategory.ALTERATION

    def __init__(self, name, options=None, fields=None):
        self.name = name
        self.options = options
        self.fields = fields or {}
        super().__init__()

    @property
    def name_lower(self):
        return self.name.lower()

    def state_forwards(self, app_label, state):
        model_key = app_label, self.name_lower
        model_state = state.models[model_key]
        if self.options is not None:
            options = {**model_state.options, **self.options}
            for key in AlterModelOptions.ALTER_OPTION_KEYS:
                if key not in self.options:
                    options.pop(key, None)
            model_state.options = options
        current = model_state.fields
        for name, field in self.fields.items():
            if _schema_of(current[name]) != _schema_of(field):
                raise ValueError(
                    f"{app_label}.{self.name}.{name}: RelabelModel changes labels only"
                )
        # In place, as `AlterField` does. The relations registry is left alone: only the
        # autodetector computes it, after the last operation, and it reads no label.
        current.update(self.fields)
        # Labels change no relation, so the related models need no recursive re-render.
        state.reload_model(app_label, self.name_lower, delay=True)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        pass

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        pass

    def describe(self):
        return f"Relabel {self.name} and {len(self.fields)} of its fields"

    @property
    def migration_name_fragment(self):
        return f"relabel_{self.name_lower}"
