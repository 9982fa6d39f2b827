"""`Order` and `OrderFormAnswer` now belong to `tickets` (tickets.0002): drop them from this app's
state. Their tables stay; tickets' models use them under the same names."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("orders", "0001_initial"),
        ("tickets", "0002_order"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="OrderFormAnswer"),
                migrations.DeleteModel(name="Order"),
            ],
        ),
    ]
