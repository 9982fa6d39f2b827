"""Tickets own their orders: `Order` and `OrderFormAnswer` move here from the `orders` app.

Only Django's state moves. The tables keep their names (`orders_order`,
`orders_orderformanswer`), columns, indexes and constraints, so no row moves and no table
changes; `orders.0002` then drops the models from that app's state. The content types move too,
so that permissions and admin history stay linked to the models.
"""

import django.db.models.deletion
import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models

MODELS = ("order", "orderformanswer")


def _move_content_types(apps, schema_editor, *, source: str, target: str) -> None:
    content_types = apps.get_model("contenttypes", "ContentType").objects.db_manager(
        schema_editor.connection.alias
    )
    for model in MODELS:
        if not content_types.filter(app_label=target, model=model).exists():
            content_types.filter(app_label=source, model=model).update(app_label=target)


def content_types_to_tickets(apps, schema_editor) -> None:
    _move_content_types(apps, schema_editor, source="orders", target="tickets")


def content_types_to_orders(apps, schema_editor) -> None:
    _move_content_types(apps, schema_editor, source="tickets", target="orders")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("events", "0001_initial"),
        ("orders", "0001_initial"),
        ("tickets", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Order",
                    fields=[
                        (
                            "id",
                            models.AutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("paid", "Paid"),
                                    ("cancelled", "Cancelled"),
                                ],
                                default="pending",
                                max_length=16,
                            ),
                        ),
                        (
                            "kind",
                            models.CharField(
                                choices=[("normal", "Normal"), ("external", "External")],
                                default="normal",
                                max_length=16,
                            ),
                        ),
                        ("buyer_firstname", models.CharField(max_length=150)),
                        ("buyer_lastname", models.CharField(max_length=150)),
                        ("buyer_email", models.EmailField(max_length=254)),
                        (
                            "buyer_phone",
                            models.CharField(blank=True, help_text="E.164", max_length=32),
                        ),
                        (
                            "buyer_phone_country",
                            models.CharField(
                                blank=True, help_text="ISO 3166 alpha-2", max_length=2
                            ),
                        ),
                        ("paid_at", models.DateTimeField(blank=True, null=True)),
                        ("cancelled_at", models.DateTimeField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "buyer",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="orders",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "event",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="orders",
                                to="events.event",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "orders_order",
                        "indexes": [
                            models.Index(fields=["event", "id"], name="order_event_id_idx"),
                            models.Index(
                                django.db.models.functions.text.Lower("buyer_email"),
                                name="order_buyer_email_lower_idx",
                            ),
                        ],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("status", "paid"), _negated=True),
                                    ("paid_at__isnull", False),
                                    _connector="OR",
                                ),
                                name="order_paid_has_paid_at",
                            ),
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="OrderFormAnswer",
                    fields=[
                        (
                            "id",
                            models.AutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("value", models.TextField(blank=True)),
                        (
                            "field",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="events.formfield",
                            ),
                        ),
                        (
                            "order",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="form_answers",
                                to="tickets.order",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "orders_orderformanswer",
                        "ordering": ["field__position", "field_id"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("order", "field"), name="order_answer_unique_field"
                            ),
                        ],
                    },
                ),
                migrations.AlterField(
                    model_name="ticket",
                    name="order",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="tickets",
                        to="tickets.order",
                    ),
                ),
            ],
        ),
        migrations.RunPython(content_types_to_tickets, content_types_to_orders),
    ]
