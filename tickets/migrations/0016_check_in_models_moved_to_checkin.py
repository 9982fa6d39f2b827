"""`TicketCheckIn`, `CheckInLog` and `ScanRecord` now belong to `checkin` (checkin.0001): drop them
from this app's state. Their tables stay; checkin's models use them under the same names."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("tickets", "0015_check_in_type_change_once"),
        ("checkin", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="ScanRecord"),
                migrations.DeleteModel(name="CheckInLog"),
                migrations.DeleteModel(name="TicketCheckIn"),
            ],
        ),
    ]
