"""modeling-disan: DiSAN, Distance-based SAN, DSA and NTI sentence encoders as Hugging Face transformers models.

Importing the package registers every family with AutoConfig, AutoModel and AutoModelForSequenceClassification.
"""

from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

from .configuration_disan import DiSANConfig
from .modeling_disan import DiSANForSequenceClassification, DiSANModel, DiSANPreTrainedModel
from .configuration_distance_san import DistanceSANConfig
from .modeling_distance_san import DistanceSANForSequenceClassification, DistanceSANModel, DistanceSANPreTrainedModel
from .configuration_dsa import DSAConfig
from .modeling_dsa import DSAForSequenceClassification, DSAModel, DSAPreTrainedModel
from .configuration_nti import NTIConfig
from .modeling_nti import NTIForSequenceClassification, NTIModel, NTIPreTrainedModel

__version__ = "0.1.0"

# (config class, base model, sequence-classification model) per family; also used to write complete auto_maps
FAMILIES = {
    "disan": (DiSANConfig, DiSANModel, DiSANForSequenceClassification),
    "distance_san": (DistanceSANConfig, DistanceSANModel, DistanceSANForSequenceClassification),
    "dsa": (DSAConfig, DSAModel, DSAForSequenceClassification),
    "nti": (NTIConfig, NTIModel, NTIForSequenceClassification),
}


def _register() -> None:
    for model_type, (config_cls, base_cls, head_cls) in FAMILIES.items():
        AutoConfig.register(model_type, config_cls, exist_ok=True)
        AutoModel.register(config_cls, base_cls, exist_ok=True)
        AutoModelForSequenceClassification.register(config_cls, head_cls, exist_ok=True)
        # trust_remote_code: save_pretrained copies the code files and writes auto_map
        config_cls.register_for_auto_class()
        base_cls.register_for_auto_class("AutoModel")
        head_cls.register_for_auto_class("AutoModelForSequenceClassification")


_register()

__all__ = ["DiSANConfig", "DiSANModel", "DiSANForSequenceClassification", "DiSANPreTrainedModel", "FAMILIES"]
__all__ += ["DistanceSANConfig", "DistanceSANModel", "DistanceSANForSequenceClassification",
            "DistanceSANPreTrainedModel"]
__all__ += ["DSAConfig", "DSAModel", "DSAForSequenceClassification", "DSAPreTrainedModel"]
__all__ += ["NTIConfig", "NTIModel", "NTIForSequenceClassification", "NTIPreTrainedModel"]
